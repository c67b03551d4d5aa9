package scheduler_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/scheduler"
)

// A job with SuspendAfterFailures 2 is suspended for every replica by its
// second failure in a row, once (one result carries SuspendedAfter), with
// the note saying why; Resume lifts it and starts the count again, so one
// more failure does not suspend it, and the second does.
func TestSuspendAfterFailures(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	ctx := context.Background()
	const name = "flaky"
	var mu sync.Mutex
	var suspending []scheduler.Run
	var reps []*replica
	for _, id := range []string{"r1", "r2"} {
		r := newReplica(t, url, lockOpts(id), scheduler.Options{Logger: testLogger(t, id), OnResult: func(run scheduler.Run) {
			if run.SuspendedAfter > 0 {
				mu.Lock()
				suspending = append(suspending, run)
				mu.Unlock()
			}
		}})
		addJob(t, r, job.Job{Name: name, Schedule: "* * * * * *", SuspendAfterFailures: 2,
			Run: func(context.Context) error { return errors.New("always fails") }})
		reps = append(reps, r)
		r.start(t)
	}
	state, h := jobState(t, url, name)
	waitFor(t, 10*time.Second, "the job suspended", func() bool { return state().Suspended != nil })
	st := state()
	if n := len(withStatus(st.Runs, scheduler.StatusFailed)); n != 2 {
		t.Errorf("suspended after %d failed runs, want 2", n)
	}
	if st.Suspended.Note != "suspended after 2 consecutive failures" || st.Suspended.By != "cronlock" {
		t.Errorf("suspension %+v, want by cronlock with the note", *st.Suspended)
	}
	time.Sleep(1500 * time.Millisecond) // ticks pass: none may run, no second suspension
	mu.Lock()
	if len(suspending) != 1 || suspending[0].SuspendedAfter != 2 {
		t.Errorf("results that suspended the job: %+v, want one with SuspendedAfter 2", suspending)
	}
	mu.Unlock()
	if n := len(withStatus(state().Runs, scheduler.StatusFailed)); n != 2 {
		t.Errorf("%d failed runs while suspended, want still 2", n)
	}

	if err := h.Resume(ctx, name); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "a failure after the resume", func() bool {
		return len(withStatus(state().Runs, scheduler.StatusFailed)) == 3
	})
	if st := state(); st.Suspended != nil || st.Failures != 1 {
		t.Errorf("after a resume and one failure: suspended %v, %d failures in a row; want not suspended, 1", st.Suspended, st.Failures)
	}
	waitFor(t, 5*time.Second, "suspended again after two more", func() bool { return state().Suspended != nil })
	for _, r := range reps {
		r.stop()
	}
}
