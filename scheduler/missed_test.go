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

// An every-second job whose run takes 2.5 s: the ticks that come while it
// runs are recorded as missed for overlap, not as if no replica were there,
// and counted under that reason.
func TestMissedForOverlap(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	const name = "slow"
	starts := newRecorder()
	var regs []*prometheus.Registry
	var reps []*replica
	for _, id := range []string{"r1", "r2"} {
		reg := prometheus.NewRegistry()
		r := newReplica(t, url, lockOpts(id), scheduler.Options{Registerer: reg, Logger: testLogger(t, id)})
		addJob(t, r, job.Job{Name: name, Schedule: "* * * * * *", Run: startRecorder(id, starts, 2500*time.Millisecond)})
		regs, reps = append(regs, reg), append(reps, r)
		r.start(t)
	}
	for range 3 { // the second and third runs' claims record the overlaps
		starts.next(t, 10*time.Second)
	}
	for _, r := range reps {
		r.stop()
	}
	missed := withStatus(runsOf(t, reps[0], name), scheduler.StatusMissed)
	ticks := 0
	for _, m := range missed {
		if m.Reason != scheduler.ReasonOverlap {
			t.Errorf("missed entry %+v: reason %q, want %q", m, m.Reason, scheduler.ReasonOverlap)
		}
		ticks += m.Ticks
	}
	if ticks < 2 {
		t.Fatalf("missed entries %+v: want the ticks during the runs recorded (overlap)", missed)
	}
	got := metricSum(t, "cronlock_ticks_missed_total", map[string]string{"job": name, "reason": string(scheduler.ReasonOverlap)}, regs...)
	if got != float64(ticks) {
		t.Errorf("cronlock_ticks_missed_total{reason=overlap} = %v, want %d", got, ticks)
	}
	if n := metricSum(t, "cronlock_ticks_missed_total", map[string]string{"job": name, "reason": string(scheduler.ReasonNoReplica)}, regs...); n != 0 {
		t.Errorf("cronlock_ticks_missed_total{reason=no_replica} = %v, want 0", n)
	}
}

// When every replica was stopped for 3 s, the first claim after the
// restart records the ticks in between as missed for lack of a replica.
func TestMissedWhileNoReplicaRan(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	const name = "steady"
	starts := newRecorder()
	first := []*replica{
		newReplica(t, url, lockOpts("a1"), scheduler.Options{Logger: testLogger(t, "a1")}),
		newReplica(t, url, lockOpts("b1"), scheduler.Options{Logger: testLogger(t, "b1")}),
	}
	for _, r := range first {
		addJob(t, r, job.Job{Name: name, Schedule: "* * * * * *", Run: startRecorder("first", starts, 0)})
		r.start(t)
	}
	starts.next(t, 10*time.Second)
	for _, r := range first {
		r.stop()
	}
	time.Sleep(3 * time.Second) // the outage itself: no replica runs

	reg := prometheus.NewRegistry()
	again := newReplica(t, url, lockOpts("a2"), scheduler.Options{Registerer: reg, Logger: testLogger(t, "a2")})
	addJob(t, again, job.Job{Name: name, Schedule: "* * * * * *", Run: startRecorder("again", starts, 0)})
	again.start(t)
	waitFor(t, 10*time.Second, "a run after the restart", func() bool {
		all := starts.all()
		return all[len(all)-1].replica == "again"
	})
	again.stop()

	missed := withStatus(runsOf(t, again, name), scheduler.StatusMissed)
	if len(missed) != 1 || missed[0].Reason != scheduler.ReasonNoReplica || missed[0].Ticks < 3 {
		t.Fatalf("missed entries %+v, want one with reason %q for the ≥3 ticks while stopped", missed, scheduler.ReasonNoReplica)
	}
	got := metricSum(t, "cronlock_ticks_missed_total", map[string]string{"job": name, "reason": string(scheduler.ReasonNoReplica)}, reg)
	if got != float64(missed[0].Ticks) {
		t.Errorf("cronlock_ticks_missed_total{reason=no_replica} = %v, want %d", got, missed[0].Ticks)
	}
}

// A run that ends just before the next tick, whose result is still being
// handled when that tick falls due (here OnResult holds the replica's
// goroutine): the tick runs late on the replica, instead of being recorded
// missed as if no replica were there.
func TestTickDueWhileTheResultIsWrittenRuns(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	const name = "edge"
	const margin = 150 * time.Millisecond
	starts := newRecorder()
	var first time.Time // the first run's tick; written by its run, read by OnResult after it
	onResult := func(r scheduler.Run) {
		if r.Job == name && r.Status == scheduler.StatusSucceeded && r.Tick.Equal(first) {
			time.Sleep(time.Until(first.Add(time.Second + margin)))
		}
	}
	r := newReplica(t, url, lockOpts("r1"), scheduler.Options{Logger: testLogger(t, "r1"), OnResult: onResult})
	run := func(ctx context.Context) error {
		info, _ := job.FromContext(ctx)
		if first.IsZero() {
			first = info.Tick
			time.Sleep(time.Until(first.Add(time.Second - margin)))
		}
		return startRecorder("r1", starts, 0)(ctx)
	}
	addJob(t, r, job.Job{Name: name, Schedule: "* * * * * *", Run: run})
	r.start(t)
	defer r.stop()
	a, b := starts.next(t, 10*time.Second), starts.next(t, 10*time.Second)
	if want := a.tick.Add(time.Second); !b.tick.Equal(want) {
		t.Fatalf("after the run of %s, the run of %s: want %s, due while the result was handled", a.tick, b.tick, want)
	}
	if late := b.start.Sub(b.tick); late < margin/2 {
		t.Errorf("the run of %s started %v after its tick: want it late, after the result", b.tick, late)
	}
}
