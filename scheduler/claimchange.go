package scheduler

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cronlock/cronlock/internal/history"
	"github.com/cronlock/cronlock/job"
)

// claimed is the outcome of a claim.
type claimed struct {
	ok bool // false: the tick or a later one was claimed already
	// run is the claimed run as recorded (with its ID).
	run Run
	// recorded are the entries the claim added or finished besides run
	// (missed ticks, abandoned runs), for Options.OnResult.
	recorded []Run
	// missed counts the ticks between the previous claim and this one that
	// no replica ran, by reason.
	missed map[Reason]int
}

// claimRequest is what a claim needs to know besides the job's state.
type claimRequest struct {
	sched job.Schedule
	run   Run
	// definition is the job.Job.Definition of the job making the claim,
	// which the record keeps (see definition.go).
	definition string
	// gapReason labels the missed ticks that nothing else explains
	// (no_replica, outage).
	gapReason Reason
	// held are the ticks at which this replica found the job's lock held.
	held heldTicks
	// gone reports whether a run left "running" in the history has ended
	// without its replica able to record it (see ownerGone); nil: always.
	gone func(r Run) bool
	// queueFirst (overlap queue and replace): a tick queued during the
	// previous run and not yet claimed runs before this one, which waits
	// in its place (see overlap.go).
	queueFirst bool
}

// claimSettled returns, for a take that claims a tick (req.claims), what
// tells from a record's headers alone that claimChange would refuse it:
// the record claims that very tick, under a hold that is not this take's
// own (id) nor one this replica is unsure it stored, which the take's
// change would drop (dropUnstarted). A replica whose turn comes before
// its watch shows the claim then costs a read, not a decode. nil for a
// take that claims no tick.
func (s *Scheduler) claimSettled(req takeRequest, id string) func(nats.Header) bool {
	if req.claims.IsZero() {
		return nil
	}
	tick := req.claims.UTC().Format(time.RFC3339Nano) // as history.Header writes it
	return func(hdr nats.Header) bool {
		if hdr.Get(history.LastTickHeader) != tick {
			return false
		}
		lease := hdr.Get(history.HolderHeader)
		return lease == "" || (lease != id && !s.unsure.has(req.name, lease))
	}
}

// claimChange is the change of a claim: it records req.run.Tick as the
// job's last claimed tick and the run as running, under hold h, unless that
// tick or a later one was claimed already or the job is suspended. Ticks
// between the previous claim and this one, which no replica ran, are
// recorded as missed (see missedReason). Runs left "running" whose replica
// is gone are marked abandoned (the claim takes the job's lock, so no other
// run of the job is in progress). The outcome goes to c.
func claimChange(req claimRequest, c *claimed) func(*history.Record, *history.Hold) bool {
	return func(st *history.Record, h *history.Hold) bool {
		run := req.run
		if !st.LastTick.IsZero() && !run.Tick.After(st.LastTick) {
			return false
		}
		if st.Suspended != nil {
			return false // suspended before the watch told (or kept by a repair, see corrupt.go)
		}
		gapsTo := req
		if q := st.Queued; req.queueFirst && q.After(st.LastTick) && run.Tick.After(q) {
			// The previous run's result came late, just before this tick:
			// its queued tick is still owed a run. It runs now, and this
			// tick waits as the queued one.
			st.Queued, run.Tick = run.Tick, q
			gapsTo.run.Tick = q // the missed ticks are those before it
		}
		*c = claimed{missed: map[Reason]int{}}
		c.recorded = append(markAbandoned(st, req.gone), addMissed(st, gapsTo, c.missed)...)
		st.LastTick = run.Tick
		st.Rerun = nil // a new tick supersedes an older one's rerun
		run.Owner, run.Token = h.Owner, h.Token
		// The run starts once it holds the lock, which it may have waited
		// for, or at its tick when claimed ahead of it (ahead.go).
		run.Start = later(h.Since, run.Start)
		c.run = addStart(st, run, req.definition)
		return true
	}
}

// addMissed records the ticks strictly between st.LastTick and the run's
// tick as missed entries, counting them by reason in counts.
func addMissed(st *history.Record, req claimRequest, counts map[Reason]int) []Run {
	if st.LastTick.IsZero() {
		return nil // a new job: nothing was missed
	}
	var busy []span
	read := false // the runs are read at the first tick missed: most claims miss none
	reason := func(t time.Time) Reason {
		if !read {
			busy, read = busySpans(st), true
		}
		return missedReason(t, busy, req)
	}
	var out []Run
	for _, g := range gaps(req.sched, st.LastTick, req.run.Tick, reason) {
		counts[g.reason] += g.n
		out = append(out, st.Add(Run{Job: req.run.Job, Tick: g.first, Status: StatusMissed, Reason: g.reason, Ticks: g.n,
			Error: missedText(g, req.held.holder)}))
	}
	return out
}

// missedReason says why tick t was missed:
//   - overlap: a run of the job (scheduled, rerun or manual) held its lock;
//   - lock_held: this replica found the lock held, by a holder that ran no
//     live run (a replica that died while running the job keeps the lock
//     until its lease ends);
//   - else the claim's gap reason: no replica was there, or an outage.
func missedReason(t time.Time, busy []span, req claimRequest) Reason {
	for _, b := range busy {
		if b.covers(t) {
			return ReasonOverlap
		}
	}
	if req.held.covers(t) {
		return ReasonLockHeld
	}
	return req.gapReason
}

// span is the time a run held the job's lock: [from, until).
type span struct{ from, until time.Time }

func (b span) covers(t time.Time) bool { return !t.Before(b.from) && t.Before(b.until) }

// busySpans returns when the job's runs held its lock: every run that
// ran to a recorded end, scheduled, rerun or manual. A run without an end
// (still "running" in the history while the claimer holds the lock) has
// stopped holding it at an unknown time, and ticks found locked meanwhile
// are lock_held; missed, skipped and abandoned entries did not run.
func busySpans(st *history.Record) []span {
	var out []span
	for _, r := range st.Runs {
		switch {
		case r.Status == StatusMissed, r.Status == StatusSkipped, r.Status == StatusAbandoned, r.End.IsZero():
			continue
		}
		from := r.Tick
		if !r.Start.IsZero() && (r.Start.Before(from) || r.Backfill) {
			from = r.Start // a backfill's run held the lock from its start, long after its tick
		}
		out = append(out, span{from: from, until: r.End})
	}
	return out
}

func missedText(g gap, holder string) string {
	span := fmt.Sprintf("%d tick(s) from %s to %s", g.n, g.first.UTC().Format(time.RFC3339), g.last.UTC().Format(time.RFC3339))
	switch g.reason {
	case ReasonOverlap:
		return span + " skipped: the job's previous run was still running"
	case ReasonOutage:
		return span + " missed: replicas could not coordinate through NATS"
	case ReasonLockHeld:
		by := "a holder"
		if holder != "" {
			by = holder
		}
		return span + " missed: the job's lock was held by " + by + ", which did not run them, until its lease ended"
	}
	return span + " ran on no replica"
}

// markAbandoned marks the runs still "running" whose replica is gone (gone
// nil: all of them) as abandoned and returns them.
func markAbandoned(st *history.Record, gone func(Run) bool) []Run {
	var out []Run
	for i := range st.Runs {
		if st.Runs[i].Status == StatusRunning && (gone == nil || gone(st.Runs[i])) {
			st.Runs[i].Status = StatusAbandoned
			st.Runs[i].Error = "the replica running it stopped without recording a result"
			st.NoteResult(st.Runs[i])
			r := st.Runs[i]
			r.Previous = st.Previous(i)
			out = append(out, r)
		}
	}
	return out
}

// addStart adds the entry of a run starting, made by the job's definition
// def ("" none): the record keeps the definition of the last start that
// had one (see definition.go).
func addStart(st *history.Record, r Run, def string) Run {
	if def != "" {
		st.Definition = def
	}
	return st.Add(r)
}

// manualChange is the change of a manual run's start, which claims no
// tick: it adds run (of the job's definition def) under hold h; the
// recorded run goes to out.
func manualChange(run Run, def string, out *Run) func(*history.Record, *history.Hold) bool {
	return func(st *history.Record, h *history.Hold) bool {
		r := run
		r.Owner, r.Token = h.Owner, h.Token
		*out = addStart(st, r, def)
		return true
	}
}

// skip records tick as claimed and not run, with reason (suspended),
// unless it was claimed already; consecutive skips with one reason share an
// entry. It returns whether this call recorded the tick.
func (h *History) skip(ctx context.Context, sched job.Schedule, name string, tick time.Time, reason Reason) (bool, error) {
	_, rev, err := h.update(ctx, name, nil, 0, func(st *history.Record) bool {
		if !st.LastTick.IsZero() && !tick.After(st.LastTick) {
			return false
		}
		if n := len(st.Runs); n > 0 && st.Runs[n-1].Status == StatusSkipped && st.Runs[n-1].Reason == reason &&
			st.Runs[n-1].End.Equal(st.LastTick) {
			last := &st.Runs[n-1]
			last.Ticks++
			last.End = tick
			last.Error = fmt.Sprintf("%d tick(s) from %s to %s skipped: %s", last.Ticks, last.Tick.UTC().Format(time.RFC3339), tick.UTC().Format(time.RFC3339), reason)
		} else {
			st.Add(Run{Job: name, Tick: tick, End: tick, Status: StatusSkipped, Reason: reason, Ticks: 1,
				Error: fmt.Sprintf("1 tick at %s skipped: %s", tick.UTC().Format(time.RFC3339), reason)})
		}
		st.LastTick = tick
		st.Rerun = nil
		return true
	})
	return rev != 0, err
}

// rerunChange is the change of a rerun's start: it takes the job's pending
// rerun of run.Tick for run (of the job's definition def) under hold h, unless it was taken already or
// its time (at now) is over. The rerun taken and the claim go to taken and
// c.
func rerunChange(run Run, def string, now time.Time, gone func(Run) bool, taken **history.Rerun, c *claimed) func(*history.Record, *history.Hold) bool {
	return func(st *history.Record, h *history.Hold) bool {
		p := st.Rerun
		if p == nil || !p.Tick.Equal(run.Tick) || !now.Before(p.Until) || !st.LastTick.Equal(p.Tick) {
			return false
		}
		*taken = p
		st.Rerun = nil
		markAbandoned(st, gone)
		r := run
		r.Attempts = p.Attempts
		r.Owner, r.Token, r.Start = h.Owner, h.Token, h.Since
		*c = claimed{ok: true, run: addStart(st, r, def)}
		return true
	}
}

// maxCount bounds the walk over missed ticks: an every-second job down for
// a day is 86,400 steps, well within it.
const maxCount = 1_000_000

// gap is a run of consecutive missed ticks with one reason.
type gap struct {
	n           int
	first, last time.Time
	reason      Reason
}

// gaps returns the ticks strictly between after and before, split into
// runs of consecutive ticks with the same reason.
func gaps(sched job.Schedule, after, before time.Time, reason func(time.Time) Reason) []gap {
	var out []gap
	n := 0
	for t := sched.Next(after); !t.IsZero() && t.Before(before) && n < maxCount; t = sched.Next(t) {
		n++
		r := reason(t)
		if len(out) == 0 || out[len(out)-1].reason != r {
			out = append(out, gap{first: t, reason: r})
		}
		g := &out[len(out)-1]
		g.n++
		g.last = t
	}
	return out
}

// latest returns the last tick of sched after `after` and at or before now,
// or the zero time if there is none.
func latest(sched job.Schedule, after, now time.Time) time.Time {
	var out time.Time
	n := 0
	for t := sched.Next(after); !t.IsZero() && !t.After(now) && n < maxCount; t = sched.Next(t) {
		out = t
		n++
	}
	return out
}
