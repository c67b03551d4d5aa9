package scheduler_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/scheduler"
)

// An operator's Suspend stops every replica from starting the job within a
// second; the ticks are recorded as one growing skipped entry (not missed)
// and counted once; Resume starts it again without catching up on the
// suspended ticks, even with a starting deadline.
func TestSuspendAndResume(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	ctx := context.Background()
	const name = "paused"
	starts := newRecorder()
	var regs []*prometheus.Registry
	var reps []*replica
	for _, id := range []string{"r1", "r2"} {
		reg := prometheus.NewRegistry()
		r := newReplica(t, url, lockOpts(id), scheduler.Options{Registerer: reg, Logger: testLogger(t, id)})
		addJob(t, r, job.Job{Name: name, Schedule: "* * * * * *", StartingDeadline: 10 * time.Second, Run: startRecorder(id, starts, 0)})
		regs, reps = append(regs, reg), append(reps, r)
		r.start(t)
	}
	starts.next(t, 10*time.Second)
	starts.next(t, 5*time.Second)

	_, js := natstest.Connect(t, url)
	h, err := scheduler.OpenHistory(ctx, js, scheduler.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Suspend(ctx, name, "test", time.Now()); err != nil {
		t.Fatal(err)
	}
	suspended := time.Now()
	waitFor(t, 2*time.Second, "every replica's Jobs() reports the job suspended", func() bool {
		return reps[0].s.Jobs()[0].Suspended && reps[1].s.Jobs()[0].Suspended
	})
	var skipped []scheduler.Run
	waitFor(t, 10*time.Second, "a skipped entry counting 3 ticks", func() bool {
		skipped = withStatus(runsOf(t, reps[0], name), scheduler.StatusSkipped)
		return len(skipped) > 0 && skipped[0].Ticks >= 3
	})

	resuming := time.Now()
	if err := h.Resume(ctx, name); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()
	waitFor(t, 2500*time.Millisecond, "a run starting after Resume", func() bool {
		all := starts.all()
		return all[len(all)-1].start.After(resumed)
	})
	for _, r := range reps {
		if r.s.Jobs()[0].Suspended {
			t.Error("Jobs() reports the job suspended after Resume")
		}
		r.stop()
	}

	for _, x := range starts.all() {
		if x.start.After(suspended.Add(time.Second)) && x.start.Before(resuming) {
			t.Errorf("run of tick %v started %v after Suspend returned", x.tick, x.start.Sub(suspended))
		}
		if x.tick.After(suspended.Add(time.Second)) && x.tick.Before(resuming) {
			t.Errorf("tick %v of the suspended period ran (at %v): no catch-up after Resume", x.tick, x.start)
		}
	}
	history := runsOf(t, reps[0], name)
	skipped = withStatus(history, scheduler.StatusSkipped)
	if len(skipped) != 1 || skipped[0].Reason != scheduler.ReasonSuspended || skipped[0].Ticks < 3 {
		t.Fatalf("skipped entries %+v, want one with reason %q counting the suspended ticks", skipped, scheduler.ReasonSuspended)
	}
	if missed := withStatus(history, scheduler.StatusMissed); len(missed) != 0 {
		t.Errorf("missed entries %+v: a suspension misses nothing", missed)
	}
	got := metricSum(t, "cronlock_ticks_skipped_total", map[string]string{"job": name, "reason": string(scheduler.ReasonSuspended)}, regs...)
	if got != float64(skipped[0].Ticks) {
		t.Errorf("cronlock_ticks_skipped_total{reason=suspended} summed over replicas = %v, want %d (the skipped entry's ticks)", got, skipped[0].Ticks)
	}
}

// A job suspended in its own definition (job.Job.Suspended) starts no run
// and records its ticks as skipped.
func TestSuspendedInConfigSkips(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	const name = "off"
	starts := newRecorder()
	r := newReplica(t, url, lockOpts("me"), scheduler.Options{Logger: testLogger(t, "me")})
	addJob(t, r, job.Job{Name: name, Schedule: "* * * * * *", Suspended: true, Run: startRecorder("me", starts, 0)})
	r.start(t)
	if !r.s.Jobs()[0].Suspended {
		t.Error("Jobs() does not report the job suspended")
	}
	waitFor(t, 10*time.Second, "a skipped entry counting 2 ticks", func() bool {
		s := withStatus(runsOf(t, r, name), scheduler.StatusSkipped)
		return len(s) == 1 && s[0].Ticks >= 2 && s[0].Reason == scheduler.ReasonSuspended
	})
	if n := len(starts.all()); n != 0 {
		t.Errorf("%d runs of a suspended job", n)
	}
	if h := runsOf(t, r, name); len(h) != 1 {
		t.Errorf("history %+v, want just the skipped entry", h)
	}
}
