package scheduler

import (
	"testing"
	"time"

	"github.com/cronlock/cronlock/job"
)

// A claim of a job under overlap queue or replace that finds a queued
// tick not yet claimed (the previous run's result came late) claims that
// tick and queues its own in its place, recording no tick missed; without
// queueFirst (skip) the queued tick is superseded and recorded missed.
func TestClaimRunsTheQueuedTickFirst(t *testing.T) {
	t.Parallel()
	sched, err := job.ParseSchedule("* * * * * *", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	q, now := t0.Add(time.Second), t0.Add(2*time.Second)
	state := func() jobState {
		return jobState{LastTick: t0, Queued: q, Seq: 1,
			Runs: []Run{{Job: "j", ID: 1, Tick: t0, Start: t0, End: q.Add(500 * time.Millisecond), Status: StatusSucceeded}}}
	}
	h := &hold{Owner: "r1", Lease: "l", Token: 2, Since: now, At: now}
	for _, queueFirst := range []bool{true, false} {
		st := state()
		var c claimed
		req := claimRequest{sched: sched, run: Run{Job: "j", Tick: now, Status: StatusRunning}, gapReason: ReasonNoReplica, queueFirst: queueFirst}
		if !claimChange(req, &c)(&st, h) {
			t.Fatalf("queueFirst %v: the claim was refused", queueFirst)
		}
		switch {
		case queueFirst && (!c.run.Tick.Equal(q) || !st.Queued.Equal(now) || len(c.recorded) != 0):
			t.Errorf("queue: claimed %v, queued %v, recorded %+v; want the queued tick %v claimed, %v queued, nothing missed",
				c.run.Tick, st.Queued, c.recorded, q, now)
		case !queueFirst && (!c.run.Tick.Equal(now) || len(c.recorded) != 1 || !c.recorded[0].Tick.Equal(q)):
			t.Errorf("skip: claimed %v, recorded %+v; want %v claimed and %v missed", c.run.Tick, c.recorded, now, q)
		}
	}
}
