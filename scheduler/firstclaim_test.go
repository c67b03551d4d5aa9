package scheduler_test

import (
	"bytes"
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/scheduler"
)

// A new job's first claim is one write: the watch has shown that its
// record does not exist, so the replica does not read it first. Its later
// ticks start from the replica's own last write, so no tick of the job
// reads the record.
func TestNewJobClaimsWithoutReading(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	const name = "fresh.job"
	reads := countReads(t, url, name)
	r := newReplica(t, url, lockOpts("r1"), scheduler.Options{})
	runs := newRecorder()
	err := r.s.Add(job.Job{Name: name, Schedule: "* * * * * *", Run: func(ctx context.Context) error {
		info, _ := job.FromContext(ctx)
		runs.add(rec{tick: info.Tick})
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	r.start(t)
	for range 3 {
		runs.next(t, 10*time.Second)
	}
	if n := reads.Load(); n != 0 {
		t.Errorf("%d reads of the record of %s over its first 3 ticks, want 0", n, name)
	}
}

// countReads counts the reads (direct or not) of the job's record sent to
// the server at url.
func countReads(t *testing.T, url, name string) *atomic.Int64 {
	t.Helper()
	nc, _ := natstest.Connect(t, url)
	var n atomic.Int64
	for _, subj := range []string{"$JS.API.DIRECT.GET.>", "$JS.API.STREAM.MSG.GET.>"} {
		_, err := nc.Subscribe(subj, func(m *nats.Msg) {
			if strings.HasSuffix(m.Subject, "."+name) || bytes.Contains(m.Data, []byte(name)) {
				n.Add(1)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return &n
}
