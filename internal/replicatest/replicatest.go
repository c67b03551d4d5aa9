// Package replicatest holds what tests of the replica listings (the CLI's
// and the page's) share. It is for tests only; the product never imports
// it. It is apart from natstest because it needs the scheduler, which
// natstest's own users include.
package replicatest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/scheduler"
)

// KeepDead leaves announcements of the replicas ids, long dead, in the
// default replicas bucket of srv, as a server restarted after a crash can
// keep them (see natstest.Restartable.KeepPastTTL), and returns when the
// server was back: a listing must leave them out.
func KeepDead(tb testing.TB, srv *natstest.Restartable, ids []string) time.Time {
	tb.Helper()
	announcements := map[string][]byte{}
	for _, id := range ids {
		announcements[id], _ = json.Marshal(scheduler.Replica{ID: id, Host: "gone", PID: 1, Started: time.Now(), Running: []string{}})
	}
	return srv.KeepPastTTL(tb, scheduler.DefaultReplicaBucket, announcements, scheduler.ReplicaTTL+500*time.Millisecond)
}
