package scheduler_test

import (
	"context"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/scheduler"
)

// A job slower than its schedule has its overlapped ticks recorded as
// missed (overlap), and the success after them does not count as a
// recovery: Previous passes over the overlap entries, so the notifier sends
// no "recovered" for a job that never failed.
func TestSuccessAfterOverlapIsNoRecovery(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	results := make(chan scheduler.Run, 100)
	r := newReplica(t, url, lockOpts("r1"), scheduler.Options{OnResult: func(run scheduler.Run) { results <- run }})
	err := r.s.Add(job.Job{Name: "slow", Schedule: "* * * * * *", Run: func(ctx context.Context) error {
		select {
		case <-time.After(1500 * time.Millisecond): // longer than the 1 s interval
		case <-ctx.Done():
		}
		return ctx.Err()
	}})
	if err != nil {
		t.Fatal(err)
	}
	r.start(t)
	deadline := time.After(30 * time.Second)
	var overlapped bool
	for successes := 0; successes < 3; {
		select {
		case run := <-results:
			switch {
			case run.Status == scheduler.StatusMissed && run.Reason == scheduler.ReasonOverlap:
				overlapped = true
			case run.Status == scheduler.StatusSucceeded:
				successes++
				if overlapped && run.Previous != scheduler.StatusSucceeded {
					t.Errorf("success after overlapped ticks: Previous = %q, want %q", run.Previous, scheduler.StatusSucceeded)
				}
			default:
				t.Errorf("unexpected entry %+v", run)
			}
		case <-deadline:
			t.Fatalf("no three successes within 30 s (overlapped: %v)", overlapped)
		}
	}
	if !overlapped {
		t.Error("no tick was recorded missed for overlap")
	}
}
