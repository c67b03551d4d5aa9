package scheduler_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/scheduler"
)

// Cancel stops a running run on whichever replica runs it, within a
// second; the run is recorded cancelled by whoever asked, with no retry
// and no rerun (the job has both), and the lock is free for the next tick.
// Cancelling a job that runs nothing says ErrNotRunning.
func TestCancelStopsTheRunWhereverItRuns(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	ctx := context.Background()
	const name = "long"
	starts := newRecorder()
	stopped := make(chan time.Time, 10)
	var reps []*replica
	for _, id := range []string{"r1", "r2"} {
		r := newReplica(t, url, lockOpts(id), scheduler.Options{Logger: testLogger(t, id)})
		run := startRecorder(id, starts, 0)
		addJob(t, r, job.Job{Name: name, Schedule: "*/2 * * * * *", Retries: 2, OnInterrupt: job.InterruptRerun, Run: func(ctx context.Context) error {
			_ = run(ctx)
			<-ctx.Done()
			stopped <- time.Now()
			return ctx.Err()
		}})
		reps = append(reps, r)
		r.start(t)
	}
	_, js := natstest.Connect(t, url)
	h, err := scheduler.OpenHistory(ctx, js, scheduler.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Cancel(ctx, "never-ran", scheduler.CancelOptions{}); !errors.Is(err, scheduler.ErrNotRunning) {
		t.Fatalf("Cancel of a job that is not running: %v, want ErrNotRunning", err)
	}
	first := starts.next(t, 10*time.Second)
	var running scheduler.Run
	waitFor(t, 3*time.Second, "the run recorded running", func() bool {
		rs := withStatus(runsOf(t, reps[0], name), scheduler.StatusRunning)
		if len(rs) == 1 {
			running = rs[0]
		}
		return len(rs) == 1
	})
	asked := time.Now()
	got, err := h.Cancel(ctx, name, scheduler.CancelOptions{By: "alice", Tick: first.tick})
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != running.ID || !got.Tick.Equal(first.tick) {
		t.Fatalf("Cancel returned run %d of %v, want %d of %v", got.ID, got.Tick, running.ID, first.tick)
	}
	select {
	case at := <-stopped:
		if d := at.Sub(asked); d > time.Second {
			t.Errorf("the run stopped %v after Cancel, want within 1 s", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the run did not stop")
	}
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	rec, err := h.AwaitRun(actx, got)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != scheduler.StatusCancelled || rec.By != "alice" || rec.Attempts != 1 {
		t.Errorf("recorded %s by %q after %d attempts, want cancelled by alice after 1", rec.Status, rec.By, rec.Attempts)
	}
	// The next tick runs (the lock is free), and nothing reruns the
	// cancelled tick.
	next := starts.next(t, 5*time.Second)
	if !next.tick.After(first.tick) {
		t.Errorf("after the cancel, tick %v ran again", next.tick)
	}
	if _, err := h.Cancel(ctx, name, scheduler.CancelOptions{Tick: first.tick}); !errors.Is(err, scheduler.ErrNotRunning) {
		t.Errorf("Cancel of a tick that no longer runs: %v, want ErrNotRunning", err)
	}
	for _, r := range reps {
		r.stop()
	}
}
