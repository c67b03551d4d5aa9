package scheduler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cronlock/cronlock/internal/history"
)

// Anomalies. A job's shared record is written by every replica and trusted
// by all of them, so a record that anyone with write access to the history
// bucket left (or a forward jump of the NATS server's clock) could disable
// the job without a word. The scheduler does not trust such a record: the
// replica that reads it first repairs it by compare-and-swap (so it happens
// once, whichever replica gets there), adds a note to the job's history (an
// entry with StatusAnomaly, Reason the kind, Error what was found and
// done), logs it at warn, counts it in
// cronlock_state_anomalies_total{job,kind} and reports the note through
// Options.OnResult (the notification event "anomaly"). Kinds:
//
//   - AnomalyFutureTick: the last claimed tick is later than the server's
//     time plus FutureTickTolerance. Replicas claim a tick only once it is
//     due by their estimate of the server's clock, so no replica claimed
//     it (or the server's clock has gone back since). Rule: the stored
//     tick is taken as unclaimed. The repair clears the record's last
//     claimed tick (and a pending rerun, which belongs to it), so the next
//     tick of the schedule is claimed and runs; no tick between is
//     recorded as missed. A replica's watch never takes such a tick for
//     claimed either. Bound: a forged tick within the tolerance keeps the
//     job's ticks from running for at most FutureTickTolerance; any later
//     one, not beyond the job's next tick. A replica judges this only
//     while it knows the server's clock (see serverNow).
//   - AnomalyCorrupt: the record is not a job state (not JSON, or JSON of
//     another shape). The repair rewrites it from what can be read (each
//     field and each run that decodes, else the write's headers: last tick,
//     suspension, last success and failure) and keeps the old bytes under
//     the key corruptKey(job, revision); see corrupt.go. Until then the
//     views mark only that job corrupt.
//
// Operator commands (a History from OpenHistory) repair nothing: they show
// a corrupt record as such, and a running replica repairs it at the job's
// next tick (or catch-up).
const (
	AnomalyFutureTick Reason = "future_tick"
	AnomalyCorrupt    Reason = "corrupt"
)

// AnomalyKinds are the values of the kind label of
// cronlock_state_anomalies_total, each of which exists (at 0) for every job
// from its start.
var AnomalyKinds = []Reason{AnomalyFutureTick, AnomalyCorrupt}

// FutureTickTolerance is how far past the server's time a job's last
// claimed tick may lie and still be trusted: well beyond the error of a
// replica's estimate of the server's clock (milliseconds; clamped at
// maxOffset only for absurd offsets), short enough that a forged tick
// within it costs little.
const FutureTickTolerance = time.Minute

// repairs let a History repair the records it reads (the scheduler's; see
// above).
type repairs struct {
	// now is the server's time and whether it is known (see
	// Scheduler.serverNow): without it no tick is judged from the future.
	now    func() (time.Time, bool)
	report func(note Run) // a repair written, with its note as recorded
}

// read returns a job's state and revision, as update starts from: get, and
// in the scheduler's History the record repaired first when it cannot be
// trusted.
func (h *History) read(ctx context.Context, name string) (history.Record, uint64, error) {
	return h.readPeek(ctx, name, nil)
}

// readPeek is read whose reads ask settled first (see history.Store.GetPeek).
func (h *History) readPeek(ctx context.Context, name string, settled func(nats.Header) bool) (history.Record, uint64, error) {
	for range history.MaxCASRetries {
		st, rev, err := h.store.GetPeek(ctx, name, settled)
		if h.repairs == nil {
			return st, rev, err
		}
		var bad *CorruptError
		var note *Run
		switch {
		case errors.As(err, &bad):
			rev = bad.Revision
			if st, note, err = h.salvage(ctx, name, bad); err != nil {
				return history.Record{}, 0, err
			}
		case err != nil:
			return history.Record{}, 0, err
		default:
			note = h.repairs.distrust(name, &st)
		}
		if note == nil {
			return st, rev, nil
		}
		newRev, err := h.put(ctx, name, &st, rev)
		if err != nil {
			return history.Record{}, 0, err
		}
		if newRev != 0 {
			h.repairs.report(*note)
		}
		// Read again: after another write that came first (maybe another
		// replica's repair), or to check what a salvage recovered.
	}
	return history.Record{}, 0, fmt.Errorf("history of %q: too many concurrent updates", name)
}

// distrust applies the future_tick rule to st: when its last claimed tick
// lies beyond the tolerance, it clears it and the rerun pending for it,
// and returns the note it added.
func (r *repairs) distrust(name string, st *history.Record) *Run {
	now, known := r.now()
	if !known || !st.LastTick.After(now.Add(FutureTickTolerance)) {
		return nil
	}
	note := st.Add(Run{Job: name, Tick: now.UTC(), Status: StatusAnomaly, Reason: AnomalyFutureTick,
		Error: fmt.Sprintf("the last claimed tick %s was later than the server's time %s plus %v: not trusted; "+
			"the job's next tick is claimed from the schedule", st.LastTick.UTC().Format(time.RFC3339),
			now.UTC().Format(time.RFC3339), FutureTickTolerance)})
	st.LastTick, st.Rerun = time.Time{}, nil
	return &note
}

// anomaly reports a repaired record (see above): the log, the counter and
// OnResult.
func (s *Scheduler) anomaly(note Run) {
	s.m.anomalies.WithLabelValues(note.Job, string(note.Reason)).Inc()
	s.log.Warn().Str("job", note.Job).Str("kind", string(note.Reason)).Str("error", note.Error).
		Msg("the job's shared record could not be trusted; repaired")
	s.result(note)
}

// trustedTick is t, or the zero time when t lies beyond the tolerance past
// the server's time (the watch's view of a claim, see claims.observe).
func (s *Scheduler) trustedTick(t time.Time) time.Time {
	if now, known := s.serverNow(); known && t.After(now.Add(FutureTickTolerance)) {
		return time.Time{}
	}
	return t
}

// serverNow is s.now and whether it can judge a tick from the future: the
// offset to the server's clock is estimated (and not clamped at maxOffset),
// or the scheduler runs on its own clock (Options.LocalClock). A replica
// whose clock is far behind the server's and has no estimate yet would
// otherwise take every claim of the others for a forgery, and run their
// ticks again.
func (s *Scheduler) serverNow() (time.Time, bool) {
	if s.opts.LocalClock {
		return s.now(), true
	}
	d, ok := s.offset.Get()
	return s.clock.Now().Add(d), ok && d > -maxOffset && d < maxOffset
}
