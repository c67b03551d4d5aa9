package scheduler_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/scheduler"
)

// TestAbandonedSoonAfterReplicaDies: of three replicas, the one running a
// long manual run of a job is cut off from NATS for good, as if killed.
// Before the job's next tick (16 s after the start), within the 1 s lease
// plus ReplicaTTL plus a few seconds, a survivor records the run abandoned;
// the survivors report it (OnResult, which the daemon notifies) once
// between them, and the tick's claim, which used to mark it, reports
// nothing more.
func TestAbandonedSoonAfterReplicaDies(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	proxy := natstest.NewProxy(t, strings.TrimPrefix(url, "nats://"))
	const name = "once.long"
	tickAt := time.Now().UTC().Add(16 * time.Second).Truncate(time.Second)
	var mu sync.Mutex
	var reported []string // "replica status" of every result the survivors report
	started := make(chan struct{}, 1)
	j := job.Job{Name: name, Location: time.UTC, Run: func(ctx context.Context) error {
		if info, _ := job.FromContext(ctx); info.Tick.Equal(tickAt) {
			return nil // the scheduled run
		}
		started <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	}, Schedule: fmt.Sprintf("%d %d %d %d %d *", tickAt.Second(), tickAt.Minute(), tickAt.Hour(), tickAt.Day(), tickAt.Month())}
	doomed := newReplica(t, proxy.URL(), lockOpts("doomed"), scheduler.Options{Logger: testLogger(t, "doomed")})
	survivors := []*replica{}
	for _, id := range []string{"a", "b"} {
		survivors = append(survivors, newReplica(t, url, lockOpts(id), scheduler.Options{Logger: testLogger(t, id),
			OnResult: func(r scheduler.Run) {
				mu.Lock()
				defer mu.Unlock()
				reported = append(reported, id+" "+string(r.Status))
			}}))
	}
	for _, r := range append([]*replica{doomed}, survivors...) {
		addJob(t, r, j)
		r.start(t)
	}
	t.Cleanup(proxy.Thaw) // before the replicas stop: the doomed one then stops at once
	waitFor(t, 10*time.Second, "three replicas announced", func() bool {
		live, err := scheduler.ListReplicas(context.Background(), survivors[0].js, "")
		return err == nil && len(live) == 3
	})

	go doomed.s.Trigger(context.Background(), name)
	<-started // recorded "running" in the history
	proxy.Freeze()
	proxy.Cut()
	cut := time.Now()

	bound := min(time.Second+scheduler.ReplicaTTL+5*time.Second, time.Until(tickAt))
	waitFor(t, bound, "the run recorded abandoned before the next tick", func() bool {
		runs := runsOf(t, survivors[0], name)
		return len(runs) > 0 && runs[0].Status == scheduler.StatusAbandoned
	})
	t.Logf("recorded abandoned %v after the replica was cut off", time.Since(cut).Round(10*time.Millisecond))
	waitFor(t, time.Until(tickAt)+10*time.Second, "the next tick's run recorded", func() bool {
		runs := runsOf(t, survivors[0], name)
		return len(runs) > 1 && runs[0].Tick.Equal(tickAt) && runs[0].Status == scheduler.StatusSucceeded
	})
	// OnResult follows the history write; await it rather than read once.
	waitFor(t, 5*time.Second, "both results reported", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(reported) >= 2
	})
	mu.Lock()
	defer mu.Unlock()
	abandoned := 0
	for _, r := range reported {
		if strings.HasSuffix(r, " "+string(scheduler.StatusAbandoned)) {
			abandoned++
		}
	}
	if abandoned != 1 || len(reported) != 2 {
		t.Errorf("results reported by the survivors: %q, want the abandoned run once and the tick's run", reported)
	}
}

// TestAbandonedByRestartWithSameID: a replica with a fixed id is cut off
// from NATS in a run, and a new process with the same id takes its place
// at once, so its id stays live for the others. The new process, which
// does not run the job, records the old process's run abandoned once the
// old lease has ended, and reports it once.
func TestAbandonedByRestartWithSameID(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	proxy := natstest.NewProxy(t, strings.TrimPrefix(url, "nats://"))
	const name = "yearly.restarted"
	started := make(chan struct{}, 1)
	j := job.Job{Name: name, Schedule: "0 0 0 1 1 *", Run: func(ctx context.Context) error {
		started <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	}}
	old := newReplica(t, proxy.URL(), lockOpts("fixed"), scheduler.Options{Logger: testLogger(t, "old")})
	addJob(t, old, j)
	old.start(t)
	t.Cleanup(proxy.Thaw)
	go old.s.Trigger(context.Background(), name)
	<-started
	proxy.Freeze()
	proxy.Cut()
	cut := time.Now()

	var mu sync.Mutex
	var reported []scheduler.RunStatus
	fresh := newReplica(t, url, lockOpts("fixed"), scheduler.Options{Logger: testLogger(t, "new"),
		OnResult: func(r scheduler.Run) {
			mu.Lock()
			defer mu.Unlock()
			reported = append(reported, r.Status)
		}})
	addJob(t, fresh, j)
	fresh.start(t)
	waitFor(t, 10*time.Second, "the run recorded abandoned", func() bool {
		runs := runsOf(t, fresh, name)
		return len(runs) > 0 && runs[0].Status == scheduler.StatusAbandoned
	})
	t.Logf("recorded abandoned %v after the old process was cut off", time.Since(cut).Round(10*time.Millisecond))
	time.Sleep(time.Second)
	mu.Lock()
	defer mu.Unlock()
	if len(reported) != 1 || reported[0] != scheduler.StatusAbandoned {
		t.Errorf("results reported: %q, want one abandoned", reported)
	}
}
