package scheduler

import (
	"context"
	"fmt"
	"slices"
	"time"

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
	missed map[string]int
	// highest is the highest fencing token in the history before this run:
	// a lease token at or below it means the lock stream went back in time
	// (NATS lost writes it had acknowledged), which the caller reports.
	highest uint64
	// st and rev are the state written and its revision, for record.
	st  jobState
	rev uint64
}

// claim records run.Tick as the job's last claimed tick and run as
// running, unless that tick or a later one was claimed already. Ticks
// between the previous claim and this one, which no replica ran, are
// recorded as missed: those that came while the previous run still ran
// with reason overlap, the others with gapReason. Runs left "running" by a
// replica that stopped are marked abandoned (the caller holds the job's
// lock, so no other run of the job is in progress).
func (h *History) claim(ctx context.Context, sched job.Schedule, run Run, gapReason string) (claimed, error) {
	var c claimed
	st, rev, err := h.update(ctx, run.Job, nil, 0, func(st *jobState) bool {
		if !st.LastTick.IsZero() && !run.Tick.After(st.LastTick) {
			return false
		}
		c = claimed{missed: map[string]int{}}
		for _, r := range st.Runs {
			c.highest = max(c.highest, r.Token)
		}
		c.recorded = append(markAbandoned(st), addMissed(st, sched, run, gapReason, c.missed)...)
		st.LastTick = run.Tick
		st.Rerun = nil // a new tick supersedes an older one's rerun
		c.run = st.add(run)
		return true
	})
	c.ok, c.st, c.rev = rev != 0, st, rev
	return c, err
}

// addMissed records the ticks strictly between st.LastTick and run.Tick as
// missed entries, counting them by reason in counts.
func addMissed(st *jobState, sched job.Schedule, run Run, gapReason string, counts map[string]int) []Run {
	if st.LastTick.IsZero() {
		return nil // a new job: nothing was missed
	}
	busyUntil := st.LastTick
	if i := slices.IndexFunc(st.Runs, func(r Run) bool { return r.Tick.Equal(st.LastTick) && !r.Manual }); i >= 0 {
		busyUntil = st.Runs[i].End
	}
	var out []Run
	for _, g := range gaps(sched, st.LastTick, run.Tick, busyUntil) {
		reason := gapReason
		if g.overlap {
			reason = ReasonOverlap
		}
		counts[reason] += g.n
		out = append(out, st.add(Run{Job: run.Job, Tick: g.first, Status: StatusMissed, Reason: reason, Ticks: g.n,
			Error: missedText(g, reason)}))
	}
	return out
}

func missedText(g gap, reason string) string {
	span := fmt.Sprintf("%d tick(s) from %s to %s", g.n, g.first.UTC().Format(time.RFC3339), g.last.UTC().Format(time.RFC3339))
	switch reason {
	case ReasonOverlap:
		return span + " skipped: the job's previous run was still running"
	case ReasonOutage:
		return span + " missed: replicas could not coordinate through NATS"
	}
	return span + " ran on no replica"
}

// markAbandoned marks runs still "running" as abandoned and returns them.
func markAbandoned(st *jobState) []Run {
	var out []Run
	for i := range st.Runs {
		if st.Runs[i].Status == StatusRunning {
			st.Runs[i].Status = StatusAbandoned
			st.Runs[i].Error = "the replica running it stopped without recording a result"
			st.noteResult(st.Runs[i])
			r := st.Runs[i]
			r.Previous = st.previous(i)
			out = append(out, r)
		}
	}
	return out
}

// record inserts or replaces run (matched by ID) in the history, with the
// rerun it asks for (nil: none), and returns it as recorded. guess and rev,
// if known (from claim), save a read when nothing else wrote since.
func (h *History) record(ctx context.Context, run Run, again *rerun, guess *jobState, rev uint64) (Run, error) {
	out := run
	_, _, err := h.update(ctx, run.Job, guess, rev, func(st *jobState) bool {
		i := slices.IndexFunc(st.Runs, func(r Run) bool { return r.ID == run.ID && r.Tick.Equal(run.Tick) })
		if i < 0 {
			out = st.add(run)
		} else {
			st.Runs[i] = run
			st.noteResult(run)
			out = run
			out.Previous = st.previous(i)
		}
		if again != nil && st.LastTick.Equal(again.Tick) {
			st.Rerun = again
		}
		return true
	})
	return out, err
}

// addManual records a run started by Trigger, which claims no tick.
func (h *History) addManual(ctx context.Context, run Run) (Run, error) {
	var out Run
	_, _, err := h.update(ctx, run.Job, nil, 0, func(st *jobState) bool {
		out = st.add(run)
		return true
	})
	return out, err
}

// skip records tick as claimed and not run, with reason (suspended),
// unless it was claimed already; consecutive skips with one reason share an
// entry. It returns whether this call recorded the tick.
func (h *History) skip(ctx context.Context, sched job.Schedule, name string, tick time.Time, reason string) (bool, error) {
	_, rev, err := h.update(ctx, name, nil, 0, func(st *jobState) bool {
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
			st.add(Run{Job: name, Tick: tick, End: tick, Status: StatusSkipped, Reason: reason, Ticks: 1,
				Error: fmt.Sprintf("1 tick at %s skipped: %s", tick.UTC().Format(time.RFC3339), reason)})
		}
		st.LastTick = tick
		st.Rerun = nil
		return true
	})
	return rev != 0, err
}

// claimRerun takes the job's pending rerun of tick for run, unless it was
// taken already or its time is over. It returns the rerun taken (nil if
// none) and the claim.
func (h *History) claimRerun(ctx context.Context, run Run, now time.Time) (*rerun, claimed, error) {
	var taken *rerun
	var c claimed
	st, rev, err := h.update(ctx, run.Job, nil, 0, func(st *jobState) bool {
		p := st.Rerun
		if p == nil || !p.Tick.Equal(run.Tick) || !now.Before(p.Until) || !st.LastTick.Equal(p.Tick) {
			return false
		}
		taken = p
		st.Rerun = nil
		markAbandoned(st)
		r := run
		r.Attempts = p.Attempts
		c.run = st.add(r)
		return true
	})
	if rev == 0 {
		return nil, claimed{}, err
	}
	c.ok, c.st, c.rev = true, st, rev
	return taken, c, err
}

// maxCount bounds the walk over missed ticks: an every-second job down for
// a day is 86,400 steps, well within it.
const maxCount = 1_000_000

// gap is a run of consecutive missed ticks.
type gap struct {
	n           int
	first, last time.Time
	overlap     bool // they came while the previous run still ran
}

// gaps returns the ticks strictly between after and before, split into
// those before busyUntil (overlap) and the others.
func gaps(sched job.Schedule, after, before, busyUntil time.Time) []gap {
	var out []gap
	n := 0
	for t := sched.Next(after); !t.IsZero() && t.Before(before) && n < maxCount; t = sched.Next(t) {
		n++
		overlap := t.Before(busyUntil)
		if len(out) == 0 || out[len(out)-1].overlap != overlap {
			out = append(out, gap{first: t, overlap: overlap})
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
