package scheduler

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cronlock/cronlock/internal/history"
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
	state := func() history.Record {
		return history.Record{LastTick: t0, Queued: q, Seq: 1,
			Runs: []Run{{Job: "j", ID: 1, Tick: t0, Start: t0, End: q.Add(500 * time.Millisecond), Status: StatusSucceeded}}}
	}
	h := &history.Hold{Owner: "r1", Lease: "l", Token: 2, Since: now, At: now}
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

// A take that claims a tick settles a record from its headers alone only
// when the record claims that very tick under a hold that is neither the
// take's own nor one this replica is unsure it stored.
func TestClaimSettledByHeaders(t *testing.T) {
	t.Parallel()
	tick := time.Date(2026, 12, 6, 13, 0, 5, 0, time.UTC)
	var s Scheduler
	s.unsure.add("job", "unsure-lease", true)
	header := func(st history.Record) nats.Header { return history.Header(&st) }
	settled := s.claimSettled(takeRequest{name: "job", claims: tick}, "my-lease")
	cases := []struct {
		what string
		hdr  nats.Header
		want bool
	}{
		{"claimed and freed", header(history.Record{LastTick: tick}), true},
		{"claimed, held by another", header(history.Record{LastTick: tick, Holder: &history.Hold{Lease: "other"}}), true},
		{"claimed in a zone's offset", header(history.Record{LastTick: tick.In(time.FixedZone("x", 3600))}), true},
		{"the tick before", header(history.Record{LastTick: tick.Add(-time.Second)}), false},
		{"never claimed", header(history.Record{}), false},
		{"held by this take", header(history.Record{LastTick: tick, Holder: &history.Hold{Lease: "my-lease"}}), false},
		{"held by an unsure take of ours", header(history.Record{LastTick: tick, Holder: &history.Hold{Lease: "unsure-lease"}}), false},
	}
	for _, c := range cases {
		if got := settled(c.hdr); got != c.want {
			t.Errorf("%s: settled = %v, want %v", c.what, got, c.want)
		}
	}
	if s.claimSettled(takeRequest{name: "job"}, "my-lease") != nil {
		t.Error("a take that claims no tick is settled by headers")
	}
}
