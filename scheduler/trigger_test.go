package scheduler_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/lock"
	"github.com/cronlock/cronlock/scheduler"
)

// TestTriggerReturnsRecordedRun: Trigger answers once the run has started,
// with its entry as recorded in the history, while the run goes on; its
// errors match ErrUnknownJob, lock.ErrNotAcquired (a run holds the lock)
// and ErrStopped (also as ErrShutdown); Add and Remove match ErrJobExists
// and ErrUnknownJob.
func TestTriggerReturnsRecordedRun(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	r := newReplica(t, url, lockOpts("me"), scheduler.Options{Logger: testLogger(t, "me")})
	release := make(chan struct{})
	j := job.Job{Name: "manual", Schedule: "@yearly", Run: func(ctx context.Context) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}}
	addJob(t, r, j)
	r.start(t)
	ctx := context.Background()

	run, err := r.s.Trigger(ctx, "manual")
	if err != nil || run.ID == 0 || !run.Manual || run.Owner != "me" || run.Token == 0 || run.Status != scheduler.StatusRunning || run.Tick.IsZero() {
		t.Fatalf("Trigger = %+v, %v; want the started run as recorded", run, err)
	}
	if h := runsOf(t, r, "manual"); len(h) != 1 || h[0].ID != run.ID || h[0].Token != run.Token || h[0].Status != scheduler.StatusRunning {
		t.Errorf("history while the run goes on = %+v, want run %d running", h, run.ID)
	}
	if _, err := r.s.Trigger(ctx, "manual"); !errors.Is(err, lock.ErrNotAcquired) {
		t.Errorf("Trigger of a running job: %v, want lock.ErrNotAcquired", err)
	}
	close(release)
	waitFor(t, 10*time.Second, "the run recorded succeeded", func() bool {
		h := runsOf(t, r, "manual")
		return len(h) == 1 && h[0].ID == run.ID && h[0].Status == scheduler.StatusSucceeded
	})

	if _, err := r.s.Trigger(ctx, "nosuch"); !errors.Is(err, scheduler.ErrUnknownJob) {
		t.Errorf("Trigger of an unknown job: %v, want ErrUnknownJob", err)
	}
	if _, err := r.s.TriggerRun(ctx, "nosuch", nil); !errors.Is(err, scheduler.ErrUnknownJob) {
		t.Errorf("TriggerRun of an unknown job: %v, want ErrUnknownJob", err)
	}
	if err := r.s.Remove("nosuch"); !errors.Is(err, scheduler.ErrUnknownJob) {
		t.Errorf("Remove of an unknown job: %v, want ErrUnknownJob", err)
	}
	if err := r.s.Add(j); !errors.Is(err, scheduler.ErrJobExists) || err.Error() != `scheduler: Add: job "manual" is already registered` {
		t.Errorf("Add of a registered job: %v, want ErrJobExists", err)
	}

	r.stop()
	_, err = r.s.Trigger(ctx, "manual")
	if !errors.Is(err, scheduler.ErrStopped) || !errors.Is(err, scheduler.ErrShutdown) {
		t.Errorf("Trigger after shutdown: %v, want ErrStopped (and ErrShutdown)", err)
	}
	if err := r.s.Add(job.Job{Name: "late", Schedule: "@yearly", Run: j.Run}); !errors.Is(err, scheduler.ErrStopped) {
		t.Errorf("Add after shutdown: %v, want ErrStopped", err)
	}
}
