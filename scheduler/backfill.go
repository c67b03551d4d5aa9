package scheduler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/history"
	"github.com/cronlock/cronlock/job"
)

// A backfill runs, one at a time and oldest first, the ticks of a range
// that have no run in the job's history (missed, skipped, or before the
// job existed), each as a normal run of its tick recorded with Backfill.
// Its progress lives in the job's record (history.Record.Backfill, and the
// header history.BackfillHeader for the watch), so whichever replica takes the
// job's lock next runs the next tick: a replica that dies while running
// one is taken over when its lease ends, like any run. Each step is one
// take of the job's lock that also advances the progress, so no tick runs
// twice; a tick that has a run by then (a concurrent backfill, a rerun)
// is passed over.

// MaxBackfillTicks bounds the ticks of one backfill request.
const MaxBackfillTicks = 1000

// Errors of History.Backfill, for errors.Is.
var (
	// ErrBackfillRange: the range is empty, in the future, too long, or
	// reaches before what the history keeps.
	ErrBackfillRange = errors.New("invalid backfill range")
	// ErrBackfillRunning: a backfill of the job is in progress already.
	ErrBackfillRunning = errors.New("a backfill is in progress")
)

// Backfill is a backfill in progress as operators see it (JobState).
type Backfill struct {
	From, To, Next time.Time
	Total, Done    int
	By             string
	At             time.Time
}

// BackfillOptions configure History.Backfill.
type BackfillOptions struct {
	From, To time.Time // the range, both included; To at most the last claimed tick
	// Schedule is the job's schedule, whose ticks in the range are the
	// candidates.
	Schedule job.Schedule
	By       string // who asks, for the record and the log
	DryRun   bool   // list the ticks, start nothing
}

// Backfill starts a backfill of the job: the ticks of o.Schedule in
// [From, To] that have no run in the history, which it returns oldest
// first (and, with DryRun, only returns). The replicas run them one at a
// time; see the package's backfill notes. Errors match ErrBackfillRange
// (more than MaxBackfillTicks ticks; ticks after the job's last claimed
// tick, which the schedule still runs; ticks older than the history keeps,
// which cannot be told apart from ticks that ran) or ErrBackfillRunning.
func (h *History) Backfill(ctx context.Context, name string, o BackfillOptions) ([]time.Time, error) {
	if err := job.ValidateName(name); err != nil {
		return nil, err
	}
	if o.Schedule == nil || o.From.After(o.To) {
		return nil, fmt.Errorf("%w: from %s is after to %s", ErrBackfillRange, o.From.Format(time.RFC3339), o.To.Format(time.RFC3339))
	}
	var ticks []time.Time
	var terr error
	_, _, err := h.update(ctx, name, nil, 0, func(st *history.Record) bool {
		ticks, terr = backfillTicks(st, o.Schedule, o.From, o.To, h.store.Size())
		switch {
		case terr != nil || o.DryRun || len(ticks) == 0:
			return false
		case st.Backfill != nil:
			terr = fmt.Errorf("%w (from %s to %s, %d of %d ticks started): cancel it first (cronlock cancel --backfill %s)",
				ErrBackfillRunning, st.Backfill.From.Format(time.RFC3339), st.Backfill.To.Format(time.RFC3339),
				st.Backfill.Done, st.Backfill.Total, name)
			return false
		}
		st.Backfill = &history.Backfill{From: o.From.UTC(), To: o.To.UTC(), Next: ticks[0], Total: len(ticks), By: o.By, At: time.Now().UTC()}
		return true
	})
	if err != nil {
		return nil, err
	}
	return ticks, terr
}

// backfillTicks are the ticks of sched in [from, to] without a run in st
// (oldest first).
func backfillTicks(st *history.Record, sched job.Schedule, from, to time.Time, size int) ([]time.Time, error) {
	if st.LastTick.IsZero() || to.After(st.LastTick) {
		return nil, fmt.Errorf("%w: to %s is after the job's last claimed tick (%s): its schedule still runs those ticks",
			ErrBackfillRange, to.Format(time.RFC3339), tickText(st.LastTick))
	}
	ran := map[int64]bool{}
	for _, r := range st.Runs {
		if r.Status != StatusMissed && r.Status != StatusSkipped && r.Status != StatusAnomaly {
			ran[r.Tick.UnixNano()] = true
		}
	}
	// What the history knows starts at its oldest entry of the schedule's
	// own (a backfilled entry tells only of its tick).
	full := len(st.Runs) >= size
	var oldest time.Time
	for _, r := range st.Runs {
		if !r.Backfill {
			oldest = r.Tick
			break
		}
	}
	var out []time.Time
	n := 0
	for t := sched.Next(from.Add(-time.Nanosecond)); !t.IsZero() && !t.After(to); t = sched.Next(t) {
		if n++; n > MaxBackfillTicks {
			return nil, fmt.Errorf("%w: more than %d ticks from %s to %s; split the range", ErrBackfillRange,
				MaxBackfillTicks, from.Format(time.RFC3339), to.Format(time.RFC3339))
		}
		if full && t.Before(oldest) {
			return nil, fmt.Errorf("%w: tick %s is older than the history keeps (its oldest entry is of %s; history.size %d), "+
				"so whether it ran is not known; start the range at or after it", ErrBackfillRange,
				t.Format(time.RFC3339), oldest.Format(time.RFC3339), size)
		}
		if !ran[t.UnixNano()] {
			out = append(out, t)
		}
	}
	return out, nil
}

// nextBackfillTick is the next tick of st's backfill to run, if any.
func nextBackfillTick(st *history.Record, sched job.Schedule, size int) (time.Time, bool) {
	b := st.Backfill
	if b == nil {
		return time.Time{}, false
	}
	ticks, err := backfillTicks(st, sched, b.Next, b.To, size)
	if err != nil || len(ticks) == 0 {
		return time.Time{}, false
	}
	return ticks[0], true
}

// backfillChange is the change of a backfill step's take: it records run
// (of the backfill's next tick, which it sets) as running under hold h
// and advances the backfill past it; it refuses when nothing is left
// (then endBackfill clears it). The run recorded goes to out.
func backfillChange(run Run, def string, sched job.Schedule, size int, gone func(Run) bool, out *Run) func(*history.Record, *history.Hold) bool {
	return func(st *history.Record, h *history.Hold) bool {
		tick, ok := nextBackfillTick(st, sched, size)
		if !ok || st.Suspended != nil {
			return false
		}
		markAbandoned(st, gone)
		b := *st.Backfill
		b.Next, b.Done = tick.Add(time.Nanosecond), b.Done+1
		st.Backfill = &b
		r := run
		r.Tick, r.Backfill = tick, true
		r.Owner, r.Token, r.Start = h.Owner, h.Token, h.Since
		*out = addStart(st, r, def)
		return true
	}
}

// endBackfill clears the job's backfill if it has nothing left to run.
func (h *History) endBackfill(ctx context.Context, name string, sched job.Schedule) (bool, error) {
	_, rev, err := h.update(ctx, name, nil, 0, func(st *history.Record) bool {
		if st.Backfill == nil {
			return false
		}
		if _, ok := nextBackfillTick(st, sched, h.store.Size()); ok {
			return false
		}
		st.Backfill = nil
		return true
	})
	return rev != 0, err
}

// CancelBackfill stops the job's backfill: no further tick starts, and a
// backfill run in progress is cancelled (as by Cancel). It fails with an
// error matching ErrNotRunning when no backfill is in progress.
func (h *History) CancelBackfill(ctx context.Context, name, by string) (Backfill, error) {
	if by == "" {
		by = defaultCancelBy
	}
	var was *history.Backfill
	_, _, err := h.update(ctx, name, nil, 0, func(st *history.Record) bool {
		was = st.Backfill
		if was == nil {
			return false
		}
		st.Backfill = nil
		if r, ok := heldRun(st); ok && r.Backfill && (st.Cancel == nil || st.Cancel.Lease != st.Holder.Lease) {
			st.Cancel = &history.CancelRequest{Lease: st.Holder.Lease, By: by, At: time.Now().UTC()}
		}
		return true
	})
	switch {
	case err != nil:
		return Backfill{}, err
	case was == nil:
		return Backfill{}, fmt.Errorf("job %q: no backfill: %w", name, ErrNotRunning)
	}
	return publicBackfill(was), nil
}

func publicBackfill(b *history.Backfill) Backfill {
	return Backfill{From: b.From, To: b.To, Next: b.Next, Total: b.Total, Done: b.Done, By: b.By, At: b.At}
}

// backfillOn reports whether the watch shows a backfill on a free record.
func (c *claims) backfillOn(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := c.views[name]
	return v.backfill && v.holder == ""
}

// runBackfill runs the next tick of the job's backfill, if this replica
// takes the job's lock first; or ends the backfill when nothing is left.
func (s *Scheduler) runBackfill(e *entry) {
	if !s.claims.backfillOn(e.job.Name) || s.deferring() || s.suspended(e) || !s.beginRun() {
		return
	}
	defer s.runs.Done()
	name := e.job.Name
	log := s.log.With().Str("job", name).Bool("backfill", true).Logger()
	run := Run{Job: name, Start: s.now(), Status: StatusRunning}
	var c Run
	lease, reason, err := s.lockTick(e, time.Time{}, backfillChange(run, e.job.Definition, e.sched, s.history.store.Size(), s.ownerGone(s.ctx), &c))
	if lease == nil {
		if reason == skipAlreadyRun { // refused: nothing left, or suspended
			s.endBackfill(e, log)
		} else {
			s.skip(name, reason, err, log)
		}
		return
	}
	defer s.release(lease)
	defer s.slots.release()
	log = log.With().Time("tick", c.Tick).Str("owner", lease.Owner()).Uint64("token", lease.Token()).Logger()
	log.Info().Msg("backfill: running a tick that has no run")
	s.runInGroup(s.hard, e, &c, lease, log)
	e.slot.ranUntil = c.End
}

// endBackfill clears a finished backfill and logs it.
func (s *Scheduler) endBackfill(e *entry, log zerolog.Logger) {
	ctx, cancel := context.WithTimeout(s.ctx, s.stateTimeout())
	defer cancel()
	if ended, err := s.history.endBackfill(ctx, e.job.Name, e.sched); err != nil {
		log.Warn().Err(err).Msg("backfill: cannot record its end")
	} else if ended {
		log.Info().Msg("backfill finished: every tick of its range has a run")
	}
}

// Backfill starts a backfill of a registered job (see History.Backfill),
// with the job's own schedule unless o gives one.
func (s *Scheduler) Backfill(ctx context.Context, name string, o BackfillOptions) ([]time.Time, error) {
	e, ok := s.lookup(name)
	if !ok {
		return nil, fmt.Errorf("scheduler: Backfill: %w %q", ErrUnknownJob, name)
	}
	if o.Schedule == nil {
		o.Schedule = e.sched
	}
	return s.history.Backfill(ctx, name, o)
}
