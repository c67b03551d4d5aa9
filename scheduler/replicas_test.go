package scheduler_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/scheduler"
)

// ListReplicas lists the running schedulers with their id, host, pid and
// running jobs; one that stops disappears at once, one cut off from NATS
// within ReplicaTTL.
func TestListReplicas(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	proxy := natstest.NewProxy(t, strings.TrimPrefix(url, "nats://"))
	ctx := context.Background()
	_, js := natstest.Connect(t, url)

	busy := newReplica(t, url, lockOpts("busy"), scheduler.Options{ShutdownNow: true, Logger: testLogger(t, "busy")})
	addJob(t, busy, job.Job{Name: "forever", Schedule: "* * * * * *", Run: func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	}})
	idle := newReplica(t, url, lockOpts("idle"), scheduler.Options{Host: "host-idle", PID: 4242, Version: "v1.2.3", Logger: testLogger(t, "idle")})
	cut := newReplica(t, proxy.URL(), lockOpts("cut"), scheduler.Options{Logger: testLogger(t, "cut")})
	for _, r := range []*replica{busy, idle, cut} {
		r.start(t)
	}
	list := func() map[string]scheduler.Replica {
		rs, err := scheduler.ListReplicas(ctx, js, "")
		if err != nil {
			t.Fatalf("ListReplicas: %v", err)
		}
		out := map[string]scheduler.Replica{}
		for _, r := range rs {
			out[r.ID] = r
		}
		return out
	}
	var got map[string]scheduler.Replica
	waitFor(t, 10*time.Second, "three replicas listed, busy running its job", func() bool {
		got = list()
		return len(got) == 3 && slices.Equal(got["busy"].Running, []string{"forever"})
	})
	host, _ := os.Hostname()
	if b := got["busy"]; b.Host != host || b.PID != os.Getpid() || b.Started.IsZero() || b.Seen.IsZero() {
		t.Errorf("busy replica %+v, want host %q and pid %d by default", b, host, os.Getpid())
	}
	if i := got["idle"]; i.Host != "host-idle" || i.PID != 4242 || i.Version != "v1.2.3" || len(i.Running) != 0 {
		t.Errorf("idle replica %+v, want its configured host, pid and version, running nothing", i)
	}

	idle.stop()
	if _, ok := list()["idle"]; ok {
		t.Error("a stopped replica is still listed")
	}

	proxy.Freeze()
	t.Cleanup(proxy.Thaw)
	frozen := time.Now()
	waitFor(t, scheduler.ReplicaTTL+3*time.Second, "the cut-off replica gone from the list", func() bool {
		_, ok := list()["cut"]
		return !ok
	})
	if d := time.Since(frozen); d < scheduler.ReplicaTTL/2 {
		t.Errorf("the cut-off replica disappeared after %v, before its announcement could expire", d)
	}
	if _, ok := list()["busy"]; !ok {
		t.Error("the busy replica disappeared")
	}
}
