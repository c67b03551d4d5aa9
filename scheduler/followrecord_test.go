package scheduler_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/internal/testlog"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/lock"
	"github.com/cronlock/cronlock/scheduler"
)

// A forced release of a job's lock (cronlock unlock --force) ends the
// holder's run within a watch delivery, not at its next renewal (10 s
// here): the run's context ends with lock.ErrLeaseLost, and the run is
// recorded lost. A run that ends by itself is not.
func TestForceReleaseEndsTheRunAtOnce(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	lo := lockOpts("holder")
	lo.LeaseDuration, lo.RenewInterval = 30*time.Second, 10*time.Second
	logs := &testlog.Buffer{}
	r := newReplica(t, url, lo, scheduler.Options{Logger: zerolog.New(logs)})
	cause := make(chan error, 1)
	for _, j := range []job.Job{
		{Name: "held.job", Schedule: "@yearly", Run: func(ctx context.Context) error {
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return ctx.Err()
		}},
		{Name: "quick.job", Schedule: "@yearly", Run: func(context.Context) error { return nil }},
	} {
		if err := r.s.Add(j); err != nil {
			t.Fatal(err)
		}
	}
	r.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if run, err := r.s.TriggerRun(ctx, "quick.job", nil); err != nil || run.Status != scheduler.StatusSucceeded {
		t.Fatalf("quick.job: %+v, %v; want it succeeded", run, err)
	}
	started := make(chan scheduler.Run, 1)
	done := make(chan scheduler.Run, 1)
	go func() {
		run, _ := r.s.TriggerRun(ctx, "held.job", func(run scheduler.Run) { started <- run })
		done <- run
	}()
	var run scheduler.Run
	select {
	case run = <-started:
	case <-ctx.Done():
		t.Fatal("held.job did not start")
	}
	_, js := natstest.Connect(t, url)
	h, err := scheduler.OpenHistory(ctx, js, scheduler.HistoryOptions{LeaseDuration: lo.LeaseDuration})
	if err != nil {
		t.Fatal(err)
	}
	// Its own write may not be delivered yet: the release is sent once the
	// record is known to hold the run.
	if hd, err := h.Holder(ctx, "held.job"); err != nil || hd.Token != run.Token || hd.Owner != "holder" {
		t.Fatalf("Holder = %+v, %v; want the run's (token %d)", hd, err, run.Token)
	}
	time.Sleep(100 * time.Millisecond) // lets the watch deliver the take's write
	released := time.Now()
	if _, err := h.ForceRelease(ctx, "held.job"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-cause:
		if !errors.Is(err, lock.ErrLeaseLost) {
			t.Errorf("the run's context ended with %v, want lock.ErrLeaseLost", err)
		}
		if d := time.Since(released); d > 3*time.Second {
			t.Errorf("the run ended %v after the release, want within a watch delivery", d)
		}
	case <-ctx.Done():
		t.Fatal("the run did not end after the release")
	}
	if run := <-done; run.Status != scheduler.StatusLost {
		t.Errorf("held.job ended %s, want %s", run.Status, scheduler.StatusLost)
	}
	if st, err := h.State(ctx, "quick.job"); err != nil || len(st.Runs) != 1 || st.Runs[0].Status != scheduler.StatusSucceeded {
		t.Errorf("quick.job: %+v, %v; want its one run succeeded", st.Runs, err)
	}
	if _, err := h.Holder(ctx, "held.job"); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Holder after the run = %v, want lock.ErrNotHeld", err)
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "lock lease lost") && !strings.Contains(line, `"job":"held.job"`) {
			t.Errorf("a lease lost that was not released: %s", line)
		}
	}
}
