package scheduler

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/history"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/lock"
)

var errTimeout = errors.New("job timeout")

// execute runs the job's attempts under lease and records the result in
// run and in the shared history. parent is cancelled when the run must stop
// regardless of the lease (shutdown after the grace, a Trigger's caller);
// the lease's loss cancels it too. c is this run's claim (nil if none), to
// record the result without a read; base is the attempts made for this
// tick before (by interrupted runs).
func (s *Scheduler) execute(parent context.Context, e *entry, run *Run, lease *heldLock, log zerolog.Logger) {
	defer s.track(e, run)()
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	stop := context.AfterFunc(lease.Context(), func() {
		if errors.Is(context.Cause(lease.Context()), lock.ErrLeaseLost) {
			cancel(lock.ErrLeaseLost)
		}
	})
	defer stop()
	stopCancel := context.AfterFunc(lease.Cancelled(), func() {
		var ce *CancelledError
		if errors.As(context.Cause(lease.Cancelled()), &ce) {
			cancel(ce)
		}
	})
	defer stopCancel()
	stopOverlap := s.startOverlap(ctx, e, run.Tick, lease, cancel)

	var err error
	skipped := false
	if why := startBlocked(parent, lease); why != nil {
		// Claimed (ahead of its tick, or before a group's slot came) but
		// stopped before it started: the job's function is not called.
		cancel(why)
		err = why
		log.Info().Err(why).Msg("run not started")
	} else if skipped = s.suspendedBeforeStart(e, run); !skipped {
		log.Info().Int("attempt", run.Attempts+1).Msg("run started")
		err = s.attempts(ctx, e, run, lease)
	}
	stopOverlap()
	var again *history.Rerun
	if skipped {
		*run = skippedBeforeStart(*run, ReasonSuspended)
	} else {
		again = s.ended(run, err, context.Cause(ctx), parent.Err() != nil, e, lease.interruptions)
		lease.suspendAfter = e.job.SuspendAfterFailures
	}
	lease.settle() // no renewal from here: the result's write frees the lock
	if !s.finish(*run, again, lease, log) {
		// NATS failed while the run ended: the ticks that pass until it
		// answers again are an outage, to catch up like one.
		e.markOutage(true)
	}
}

// ended fills in how run ended, from the error of its attempts, the cause
// of its context's cancellation and whether the caller stopped it, and
// returns the rerun to record (interrupted).
func (s *Scheduler) ended(run *Run, err, cause error, stopped bool, e *entry, interruptions int) *history.Rerun {
	run.End = later(s.now(), run.Start) // never before the start it records
	run.Status = runStatus(err, cause, stopped)
	if run.Status == StatusLost {
		s.m.leaseLost(run.Job)
	}
	if err != nil {
		run.Error = err.Error()
	}
	var ce *CancelledError
	if run.Status == StatusCancelled && errors.As(cause, &ce) {
		run.By, run.Reason, run.Error = ce.By, ce.Reason, ce.Error()
	}
	return s.interrupted(e, run, interruptions)
}

// interrupted applies the job's OnInterrupt policy to a finished run: a
// scheduled run of an InterruptRerun job that a shutdown or a lost lease
// ended is recorded as interrupted and its tick is offered for a rerun,
// until the job's next tick and at most job.MaxInterruptions times; the
// last interruption is recorded failed. It returns the rerun to record.
func (s *Scheduler) interrupted(e *entry, run *Run, interruptions int) *history.Rerun {
	if e.job.OnInterrupt != job.InterruptRerun || run.Manual || run.By != "" ||
		(run.Status != StatusCancelled && run.Status != StatusLost) {
		return nil
	}
	n := interruptions + 1
	if n >= job.MaxInterruptions {
		run.Status = StatusFailed
		run.Error = fmt.Sprintf("interrupted %d times (last: %s)", n, run.Error)
		return nil
	}
	run.Status = StatusInterrupted
	until := e.sched.Next(run.Tick)
	if until.IsZero() || !s.now().Before(until) {
		return nil // the next tick is due: it takes over
	}
	return &history.Rerun{Tick: run.Tick, Until: until, Attempts: run.Attempts, Interruptions: n}
}

// track counts a run in on its entry and in the running gauge; the
// returned function counts it out and keeps it as the entry's last run.
func (s *Scheduler) track(e *entry, run *Run) func() {
	name := e.job.Name
	e.mu.Lock()
	e.running++
	e.mu.Unlock()
	if !s.claims.follows(jobOf(name)) {
		s.followGen.Add(1) // follow its record while it runs (cancel requests)
	}
	tick := run.Tick
	s.inflight.add(tick, 1)
	s.m.running.WithLabelValues(name).Inc()
	return func() {
		s.inflight.add(tick, -1)
		s.m.running.WithLabelValues(name).Dec()
		e.mu.Lock()
		defer e.mu.Unlock()
		e.running--
		r := *run
		e.last = &r
	}
}

// suspendedBeforeStart reports whether the job of run, a scheduled tick
// claimed before its start (ahead of the tick, or while it waited for a
// group's slot), was suspended since the claim: the watch delivered the
// suspension. Had the claim come after the suspension, it would have
// recorded the tick skipped; an operator who suspends a job before its
// tick expects the tick not to run, whenever this replica claimed it. A
// run that started goes on (History.Suspend). Manual runs ignore a
// suspension, as Trigger does, and so do a backfill's.
func (s *Scheduler) suspendedBeforeStart(e *entry, run *Run) bool {
	return !run.Manual && !run.Backfill && s.suspended(e)
}

// skippedBeforeStart is the entry of run's tick, claimed but not started
// for reason: skipped, as the claim would have recorded it, so that the
// skips of the ticks after it join it.
func skippedBeforeStart(run Run, reason Reason) Run {
	run.Status, run.Reason, run.Ticks = StatusSkipped, reason, 1
	run.Start, run.End = time.Time{}, run.Tick
	run.Error = fmt.Sprintf("1 tick at %s skipped: %s", run.Tick.UTC().Format(time.RFC3339), reason)
	return run
}

// startBlocked is why a claimed run must not start, nil if it may: its
// lease was lost or its local safe deadline has passed, a cancel request
// reached it, or the caller stopped it (the shutdown's grace ended). It
// reads them at once, where execute's hooks on the same contexts, and the
// renewal's timer, fire in goroutines of their own: a replica frozen
// between its claim and the start (in the lead, or in a wait for a group
// slot) wakes with its lease gone, another replica may have run later
// ticks, and the timer that would say so may not have fired yet.
func startBlocked(parent context.Context, lease *heldLock) error {
	if cause := context.Cause(lease.Context()); errors.Is(cause, lock.ErrLeaseLost) {
		return cause
	}
	if lease.expired() {
		return lock.ErrLeaseLost
	}
	var ce *CancelledError
	if errors.As(context.Cause(lease.Cancelled()), &ce) {
		return ce
	}
	if parent.Err() != nil {
		return context.Cause(parent)
	}
	return nil
}

// runStatus maps how a run ended to its status: its error, the cause of
// its context's cancellation, and whether the caller stopped it (shutdown
// after the grace, a Trigger's caller).
func runStatus(err, cause error, stopped bool) RunStatus {
	switch {
	case err == nil:
		return StatusSucceeded
	case errors.Is(cause, lock.ErrLeaseLost):
		return StatusLost
	case errors.As(cause, new(*CancelledError)):
		return StatusCancelled
	case stopped:
		return StatusCancelled
	case errors.Is(err, errTimeout):
		return StatusTimeout
	}
	return StatusFailed
}

// finish records a finished run in the shared history (see recordResult:
// until NATS takes it, within ResultRetryFor), then reports it: OnResult,
// metrics, the log. The result is recorded even if the lease is gone: it is
// this run's entry. It reports whether the history took the record at the
// first attempt (false: NATS failed meanwhile).
func (s *Scheduler) finish(run Run, again *history.Rerun, lease *heldLock, log zerolog.Logger) bool {
	logFinished(log, run, again)
	recorded, w := s.recordResult(run, again, lease, log)
	s.result(recorded)
	if run.Status == StatusSkipped { // not started (skippedBeforeStart)
		s.m.skipped.WithLabelValues(run.Job, string(run.Reason)).Inc()
	} else {
		s.m.runs.WithLabelValues(run.Job, string(run.Status)).Inc()
		s.m.duration.WithLabelValues(run.Job).Observe(run.Duration().Seconds())
	}
	return w.ok && w.attempts == 1
}

// result hands a recorded entry to Options.OnResult.
func (s *Scheduler) result(r Run) {
	if s.opts.OnResult != nil {
		s.opts.OnResult(r)
	}
}

func logFinished(log zerolog.Logger, run Run, again *history.Rerun) {
	if run.Status == StatusSkipped {
		log.Info().Str("reason", string(run.Reason)).Msg("run not started: the job was suspended after its tick was claimed")
		return
	}
	ev := log.Warn()
	switch run.Status {
	case StatusSucceeded:
		ev = log.Info()
	case StatusLost:
		ev = log.Error()
	}
	ev = ev.Str("status", string(run.Status)).Float64("duration_seconds", run.Duration().Seconds()).Int("attempts", run.Attempts)
	if run.ExitCode != nil {
		ev = ev.Int("exit_code", *run.ExitCode)
	}
	if run.Error != "" {
		ev = ev.Str("error", run.Error)
	}
	if again != nil {
		ev = ev.Time("rerun_until", again.Until)
	}
	ev.Msg("run finished")
}

// attempts calls Run up to 1+Retries times, with RetryBackoff between
// attempts, while ctx (lease, shutdown) allows. run.Attempts counts on
// from the attempts made for the tick before (a rerun).
func (s *Scheduler) attempts(ctx context.Context, e *entry, run *Run, lease *heldLock) error {
	j := e.job
	var err error
	// Counted from 0 so that no bound is computed: 1+Retries overflowed
	// for Retries near MaxInt (0 attempts, recorded succeeded) before
	// job.MaxRetries bounded it.
	for try := 0; try <= j.Retries; try++ {
		run.Attempts++
		info := job.RunInfo{Job: jobOf(j.Name), Tick: run.Tick, Attempt: run.Attempts, Owner: lease.Owner(), Token: lease.Token()}
		actx, outcome := job.WithOutcome(job.WithLeaseDeadline(job.NewContext(ctx, info), lease.Deadline))
		err = s.attempt(actx, j)
		o := outcome()
		run.ExitCode, run.Output = o.ExitCode, o.Output
		if err == nil || ctx.Err() != nil {
			if ctx.Err() != nil && err == nil {
				err = context.Cause(ctx)
			}
			return err
		}
		if try < j.Retries {
			s.log.Warn().Str("job", j.Name).Time("tick", run.Tick).Int("attempt", run.Attempts).Err(err).Float64("backoff_seconds", j.RetryBackoff.Seconds()).Msg("attempt failed; retrying")
			t := s.clock.NewTimer(j.RetryBackoff)
			select {
			case <-t.Chan():
			case <-ctx.Done():
				t.Stop()
				return err
			}
		}
	}
	return err
}

// attempt calls j.Run once with its timeout, turning a panic into an error.
func (s *Scheduler) attempt(ctx context.Context, j job.Job) (err error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if j.Timeout > 0 {
		t := s.clock.AfterFunc(j.Timeout, func() { cancel(errTimeout) })
		defer t.Stop()
	}
	defer func() {
		if p := recover(); p != nil {
			s.log.Error().Str("job", j.Name).Str("panic", fmt.Sprint(p)).Bytes("stack", debug.Stack()).Msg("job panicked")
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	err = j.Run(ctx)
	if err != nil && errors.Is(context.Cause(ctx), errTimeout) {
		err = fmt.Errorf("%w after %v: %w", errTimeout, j.Timeout, err)
	}
	return err
}
