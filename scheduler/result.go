package scheduler

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/history"
	"github.com/cronlock/cronlock/internal/kv"
)

// A run's result is written to the shared history before its lock is
// released. When NATS does not take the write (an outage, no stream
// leader), the replica keeps the result and writes it as soon as NATS
// answers, still holding the job's lock, so that no other replica claims
// the job meanwhile and takes the run for abandoned: the history then shows
// the run's true status, and OnResult, the notifications and the metrics
// follow that status, once, when it is written.
const (
	// outputTimeout bounds one attempt to write a run's output (up to
	// its size limit, on a slow link). An attempt to write the run's entry
	// has the state timeout instead (timeouts.go), as a claim does: the
	// same read and compare-and-swap of the same record, and the job's
	// lock is held until it is written, so a write lost with its stream's
	// leader is sent again after 2 s (the default) rather than 5.
	outputTimeout = 5 * time.Second
	// recordRetryMin and recordRetryMax bound the pause between attempts
	// (doubling, jittered): short, since the result is written within this
	// much of NATS answering again.
	recordRetryMin = 100 * time.Millisecond
	recordRetryMax = time.Second
	// ResultRetryFor is how long a replica keeps trying to write a result
	// NATS did not take. Past it the replica gives up: it logs the result,
	// reports it to OnResult unrecorded, and releases the lock; the next
	// claim of the job, on any replica, then marks the run abandoned. It is
	// the bound after which a run whose result never arrived is abandoned
	// although its replica is still up.
	ResultRetryFor = 10 * time.Minute
	// resultShutdownGrace is how long a replica that is shutting down (its
	// runs cancelled) still tries to write a result before giving up.
	resultShutdownGrace = 2 * time.Second
)

// recordResult writes a finished run (its output under its own key first)
// to the history, retrying as described above, and returns the run as
// recorded and how the write went.
func (s *Scheduler) recordResult(run Run, again *history.Rerun, lease *heldLock, log zerolog.Logger) (Run, resultWrite) {
	w := resultWrite{output: run.Output == ""}
	guess, rev := &lease.written, lease.rev
	ctx, cancel := s.resultContext()
	defer cancel()
	started := time.Now()
	for pause := recordRetryMin; ; pause = min(2*pause, recordRetryMax) {
		w.attempts++
		recorded, err := s.tryRecord(ctx, run, again, lease, guess, rev, &w)
		if err == nil {
			if w.attempts > 1 {
				log.Info().Int("attempts", w.attempts).Float64("after_seconds", time.Since(started).Seconds()).
					Msg("run recorded in the history once NATS answered")
			}
			w.ok = true
			return recorded, w
		}
		if w.attempts == 1 {
			log.Warn().Err(err).Msg("cannot record the run in the history; keeping the result and retrying until NATS answers")
		}
		guess, rev = nil, 0 // the guess may be stale now: read the key
		t := time.NewTimer(pause/2 + rand.N(pause/2))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			log.Error().Err(err).Int("attempts", w.attempts).Str("status", string(run.Status)).
				Msg("gave up recording the run in the history; the job's next claim marks it abandoned")
			return run, w
		}
	}
}

// resultWrite is how writing one result went.
type resultWrite struct {
	output   bool // the output is stored (or there is none)
	attempts int
	ok       bool // the history took the result
}

// tryRecord makes one attempt at writing the output (while not stored) and
// the run's entry, each within a timeout of its own: the entry is
// attempted even when the output failed, and decides the outcome. (Sharing
// one timeout is how an output that NATS did not answer used to leave the
// entry unsent.)
func (s *Scheduler) tryRecord(ctx context.Context, run Run, again *history.Rerun, lease *heldLock, guess *history.Record, rev uint64, w *resultWrite) (Run, error) {
	if !w.output {
		octx, cancel := s.attemptContext(ctx, outputTimeout)
		w.output = s.history.store.PutOutput(octx, run) == nil
		cancel()
	}
	rctx, cancel := s.attemptContext(ctx, s.stateTimeout())
	defer cancel()
	recorded, freed, err := s.history.record(rctx, resultEntry{run: run, again: again, free: lease.id, queued: lease.queuedForResult(),
		suspendAfter: lease.suspendAfter, guess: guess, rev: rev})
	if freed {
		lease.markFreed()
	}
	return recorded, kv.Cut(rctx, err)
}

// attemptContext bounds one attempt of a result's write: timeout, or
// until the client reconnects. A write in flight when its connection
// dropped (the server it was sent to killed, say) has lost its reply, and
// the job's lock stays held until it is written: it is sent again on the
// new connection at once rather than at its timeout. Sending it twice is
// safe: the retry reads the record, and a result recorded already is not
// written again (History.record).
func (s *Scheduler) attemptContext(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	bctx, unbind := s.reconnects.Bound(ctx)
	tctx, cancel := context.WithTimeout(bctx, timeout)
	return tctx, func() {
		cancel()
		unbind()
	}
}

// resultContext bounds recordResult: it ends ResultRetryFor from now, or
// resultShutdownGrace after the scheduler cancelled its runs (s.hard).
func (s *Scheduler) resultContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), ResultRetryFor)
	unhook := context.AfterFunc(s.hard, func() { time.AfterFunc(resultShutdownGrace, cancel) })
	return ctx, func() {
		unhook()
		cancel()
	}
}

// resultEntry is a finished run to record, with what its write does
// besides.
type resultEntry struct {
	run   Run
	again *history.Rerun // the rerun it asks for (nil: none)
	// free is the lease whose hold the write frees ("" none).
	free string
	// queued is the tick it queues (zero: none; see overlap.go).
	queued time.Time
	// suspendAfter is the job's SuspendAfterFailures (0: never).
	suspendAfter int
	// guess and rev, if known (from the claim), save a read when nothing
	// else wrote since.
	guess *history.Record
	rev   uint64
}

// record inserts or replaces re.run (matched by ID) in the history, with
// what re asks besides, and returns the run as recorded and whether it
// freed the hold.
func (h *History) record(ctx context.Context, re resultEntry) (Run, bool, error) {
	run, again, queued, free := re.run, re.again, re.queued, re.free
	out, freed := run, false
	_, _, err := h.update(ctx, run.Job, re.guess, re.rev, func(st *history.Record) bool {
		i := slices.IndexFunc(st.Runs, func(r Run) bool { return r.ID == run.ID && r.Tick.Equal(run.Tick) })
		if i >= 0 && sameResult(st.Runs[i], run) && (st.Holder == nil || st.Holder.Lease != free) {
			// Recorded already, by an attempt whose reply was lost (then
			// its hold was freed in the same write): counting the failure
			// again, or writing anything, would be wrong.
			out = run // with its output, which the record does not keep
			out.Previous = st.Previous(i)
			out.SuspendedAfter = suspendedBy(st, out, re.suspendAfter)
			return false
		}
		if i < 0 {
			out = st.Add(run)
		} else {
			st.Runs[i] = run
			st.NoteResult(run)
			out = run
			out.Previous = st.Previous(i)
		}
		if again != nil && st.LastTick.Equal(again.Tick) {
			st.Rerun = again
		}
		if queued.After(st.LastTick) && queued.After(st.Queued) {
			st.Queued = queued // see overlap.go: a tick that came during the run
		}
		out.SuspendedAfter = suspendAfterFailures(st, out, re.suspendAfter)
		freed = free != "" && st.Holder != nil && st.Holder.Lease == free
		if freed {
			st.Holder = nil
		}
		return true
	})
	return out, freed && err == nil, err
}

// sameResult reports whether the entry recorded is the result r: the
// same status and end (an entry of a claim has no end yet).
func sameResult(recorded, r Run) bool {
	return recorded.Status == r.Status && recorded.End.Equal(r.End) && !r.End.IsZero()
}

// suspendedBy is what suspendAfterFailures returned when it recorded r
// (already recorded): the failures in a row, if cronlock suspended the job
// for them.
func suspendedBy(st *history.Record, r Run, after int) int {
	if after <= 0 || !r.Failed() || st.Failures < after || st.Suspended == nil || st.Suspended.By != autoSuspendedBy {
		return 0
	}
	return st.Failures
}

// autoSuspendedBy labels the suspensions SuspendAfterFailures makes.
const autoSuspendedBy = "cronlock"

// suspendAfterFailures suspends the job in st when r, just recorded, is
// its after-th failure in a row and it is not suspended yet, and returns
// that count (0: nothing done).
func suspendAfterFailures(st *history.Record, r Run, after int) int {
	if after <= 0 || !r.Failed() || st.Failures < after || st.Suspended != nil {
		return 0
	}
	st.Suspended = &Suspension{At: time.Now().UTC(), By: autoSuspendedBy,
		Note: fmt.Sprintf("suspended after %d consecutive failures", st.Failures)}
	return st.Failures
}
