package scheduler

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/lock"
)

var (
	errTimeout  = errors.New("job timeout")
	errShutdown = errors.New("scheduler shut down")
)

// loop runs one job: catch up on a missed tick, then wait for each tick
// and try to run it. A run blocks the loop, so a replica never overlaps a
// job with itself; ticks that pass meanwhile are skipped on every replica
// (the lock is held) and recorded as missed by the next claim.
func (s *Scheduler) loop(e *entry) {
	defer s.loops.Done()
	s.catchUp(e)
	var last time.Time // last tick this loop tried: never try one twice
	for {
		now := s.clock.Now()
		if now.Before(last) {
			now = last
		}
		next := e.sched.Next(now)
		e.mu.Lock()
		e.next = next
		e.mu.Unlock()
		if next.IsZero() {
			<-e.stop
			return
		}
		timer := s.clock.NewTimer(next.Sub(s.clock.Now()))
		select {
		case <-e.stop:
			timer.Stop()
			return
		case <-timer.Chan():
		}
		last = next
		s.runTick(e, next, false)
	}
}

// catchUp runs the latest tick that no replica ran, if it is at most
// StartingDeadline old (Kubernetes' startingDeadlineSeconds). Older ticks
// are not run; the next claim records them as missed.
func (s *Scheduler) catchUp(e *entry) {
	deadline := e.job.StartingDeadline
	if deadline <= 0 {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.AcquireTimeout*4)
	st, _, err := s.history.get(ctx, e.job.Name)
	cancel()
	if err != nil {
		s.log.Warn().Err(err).Str("job", e.job.Name).Msg("catch-up: cannot read the job's history")
		return
	}
	if st.LastTick.IsZero() {
		return // a new job: nothing was missed
	}
	now := s.clock.Now()
	from := st.LastTick
	if floor := now.Add(-deadline - time.Nanosecond); floor.After(from) {
		from = floor
	}
	if tick := latest(e.sched, from, now); !tick.IsZero() {
		s.log.Info().Str("job", e.job.Name).Time("tick", tick).Msg("catching up on a missed tick within the starting deadline")
		s.runTick(e, tick, true)
	}
}

// runTick tries to run one tick: take the job's lock, claim the tick in
// the shared history, run the job under the lease, record the result,
// release the lock.
func (s *Scheduler) runTick(e *entry, tick time.Time, catchUp bool) {
	name := e.job.Name
	log := s.log.With().Str("job", name).Time("tick", tick).Logger()
	if !s.beginRun() {
		s.skip(name, skipShutdown, nil, log)
		return
	}
	defer s.runs.Done()

	lease, reason, err := s.lockTick(name, tick)
	if lease == nil {
		s.skip(name, reason, err, log)
		return
	}
	defer release(lease) // after the run has returned and its result is recorded

	log = log.With().Str("owner", lease.Owner()).Uint64("token", lease.Token()).Logger()
	run := Run{Job: name, Tick: tick, Owner: lease.Owner(), Token: lease.Token(), Start: s.clock.Now(), Status: StatusRunning}
	c, err := s.claimTick(e, run)
	switch {
	case err != nil:
		s.skip(name, skipError, fmt.Errorf("cannot claim the tick in the history: %w", err), log)
		return
	case !c.ok:
		s.skip(name, skipAlreadyRun, nil, log)
		return
	}
	s.reportClaim(name, lease.Token(), c, log)
	if catchUp {
		log = log.With().Bool("catch_up", true).Logger()
	}
	s.execute(s.hard, e, &run, lease, &c, log)
}

// lockTick takes the job's lock for tick, waiting only until another
// replica claims the tick. Without a lease it returns the reason to skip.
func (s *Scheduler) lockTick(name string, tick time.Time) (Lease, string, error) {
	if s.claims.covers(name, tick) {
		return nil, skipAlreadyRun, nil
	}
	actx, claimedElsewhere := context.WithCancel(s.ctx)
	stopWatching := s.claims.onClaim(name, tick, claimedElsewhere)
	started := time.Now()
	lease, err := s.acquire(actx, name, s.opts.AcquireTimeout)
	stopWatching()
	claimedElsewhere()
	result, reason := "acquired", ""
	switch {
	case err == nil:
	case actx.Err() != nil && s.ctx.Err() == nil:
		result, reason = "not_acquired", skipAlreadyRun // claimed by another replica while waiting
	case errors.Is(err, lock.ErrNotAcquired):
		result, reason = "not_acquired", skipLocked
	case s.ctx.Err() != nil:
		result, reason = "error", skipShutdown
	default:
		result, reason = "error", skipError
	}
	s.m.acquire.WithLabelValues(result).Observe(time.Since(started).Seconds())
	return lease, reason, err
}

// skip counts and logs a tick this replica does not run.
func (s *Scheduler) skip(name, reason string, err error, log zerolog.Logger) {
	s.m.skipped.WithLabelValues(name, reason).Inc()
	switch reason {
	case skipAlreadyRun:
		log.Debug().Msg("tick skipped: already claimed by another replica")
	case skipLocked:
		log.Debug().Err(err).Msg("tick skipped: another replica holds the lock")
	case skipError:
		log.Warn().Err(err).Msg("tick skipped: NATS failed")
	}
}

// claimTick claims the run's tick in the shared history, bounded in time.
func (s *Scheduler) claimTick(e *entry, run Run) (claimed, error) {
	ctx, cancel := context.WithTimeout(s.hard, s.opts.AcquireTimeout*4)
	defer cancel()
	return s.history.claim(ctx, e.sched, run)
}

// reportClaim logs and counts what a claim found: missed ticks, and a
// fencing token that went backwards.
func (s *Scheduler) reportClaim(name string, token uint64, c claimed, log zerolog.Logger) {
	if token <= c.highest {
		// Tokens grow with the lock stream's sequence; a lower one means
		// NATS lost acknowledged writes (e.g. servers killed without
		// sync_interval: always). Fencing at the resource still holds; say
		// it loudly.
		log.Error().Uint64("highest_token", c.highest).Msg("fencing token went backwards: the NATS lock stream lost acknowledged writes; check the servers' sync_interval and recent crashes")
	}
	if c.missed > 0 {
		s.m.missed.WithLabelValues(name).Add(float64(c.missed))
		log.Warn().Int("missed", c.missed).Msg("ticks ran on no replica")
	}
}

// release frees a lease with a bounded wait; the server's TTL frees it if
// this fails.
func release(lease Lease) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = lease.Release(ctx)
}

// beginRun counts a run in, unless the scheduler is stopping.
func (s *Scheduler) beginRun() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return false
	}
	s.runs.Add(1)
	return true
}

// execute runs the job's attempts under lease and records the result in
// run and in the shared history. parent is cancelled when the run must stop
// regardless of the lease (shutdown after the grace, a Trigger's caller);
// the lease's loss cancels it too. c is this run's claim (nil if none), to
// record the result without a read.
func (s *Scheduler) execute(parent context.Context, e *entry, run *Run, lease Lease, c *claimed, log zerolog.Logger) {
	defer s.track(e, run)()
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	stop := context.AfterFunc(lease.Context(), func() {
		if errors.Is(context.Cause(lease.Context()), lock.ErrLeaseLost) {
			cancel(lock.ErrLeaseLost)
		}
	})
	defer stop()

	log.Info().Msg("run started")
	err := s.attempts(ctx, e, run, lease)
	run.End = s.clock.Now()
	run.Status = runStatus(err, context.Cause(ctx), parent.Err() != nil)
	if err != nil {
		run.Error = err.Error()
	}
	s.finish(*run, c, log)
}

// track counts a run in on its entry and in the running gauge; the
// returned function counts it out and keeps it as the entry's last run.
func (s *Scheduler) track(e *entry, run *Run) func() {
	name := e.job.Name
	e.mu.Lock()
	e.running++
	e.mu.Unlock()
	s.m.running.WithLabelValues(name).Inc()
	return func() {
		s.m.running.WithLabelValues(name).Dec()
		e.mu.Lock()
		defer e.mu.Unlock()
		e.running--
		r := *run
		e.last = &r
	}
}

// runStatus maps how a run ended to its status: its error, the cause of
// its context's cancellation, and whether the caller stopped it (shutdown
// after the grace, a Trigger's caller).
func runStatus(err, cause error, stopped bool) string {
	switch {
	case err == nil:
		return StatusSucceeded
	case errors.Is(cause, lock.ErrLeaseLost):
		return StatusLost
	case stopped:
		return StatusCancelled
	case errors.Is(err, errTimeout):
		return StatusTimeout
	}
	return StatusFailed
}

// finish records a finished run in the shared history, the metrics and
// the log. The result is recorded even if the lease is gone: it is this
// run's entry.
func (s *Scheduler) finish(run Run, c *claimed, log zerolog.Logger) {
	name := run.Job
	var guess *jobState
	var rev uint64
	if c != nil {
		guess, rev = &c.st, c.rev
	}
	rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
	if herr := s.history.record(rctx, run, guess, rev); herr != nil {
		log.Warn().Err(herr).Msg("cannot record the run in the history")
	}
	rcancel()

	s.m.runs.WithLabelValues(name, run.Status).Inc()
	s.m.duration.WithLabelValues(name).Observe(run.Duration().Seconds())
	ev := log.Warn()
	switch run.Status {
	case StatusSucceeded:
		s.m.lastSuccess.WithLabelValues(name).Set(float64(run.End.Unix()))
		ev = log.Info()
	case StatusLost:
		ev = log.Error()
	}
	ev = ev.Str("status", run.Status).Dur("duration", run.Duration()).Int("attempts", run.Attempts)
	if run.Error != "" {
		ev = ev.Str("error", run.Error)
	}
	ev.Msg("run finished")
}

// attempts calls Run up to 1+Retries times, with RetryBackoff between
// attempts, while ctx (lease, shutdown) allows.
func (s *Scheduler) attempts(ctx context.Context, e *entry, run *Run, lease Lease) error {
	j := e.job
	var err error
	for attempt := 1; attempt <= 1+j.Retries; attempt++ {
		run.Attempts = attempt
		info := job.RunInfo{Job: j.Name, Tick: run.Tick, Attempt: attempt, Owner: lease.Owner(), Token: lease.Token()}
		err = s.attempt(job.WithLeaseDeadline(job.NewContext(ctx, info), lease.Deadline), j)
		if err == nil || ctx.Err() != nil {
			if ctx.Err() != nil && err == nil {
				err = context.Cause(ctx)
			}
			return err
		}
		if attempt <= j.Retries {
			s.log.Warn().Str("job", j.Name).Time("tick", run.Tick).Int("attempt", attempt).Err(err).Dur("backoff", j.RetryBackoff).Msg("attempt failed; retrying")
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

// Trigger runs the job once now, outside its schedule, under its lock, and
// returns the run's error. The run is recorded in the shared history as
// manual; it claims no tick. ctx bounds the acquisition and cancels the run.
// Errors: lock.ErrNotAcquired (wrapped) if the job is running elsewhere.
func (s *Scheduler) Trigger(ctx context.Context, name string) error {
	e, ok := s.lookup(name)
	if !ok {
		return fmt.Errorf("scheduler: Trigger: no job %q", name)
	}
	if !s.beginRun() {
		return fmt.Errorf("scheduler: Trigger %q: %w", name, errShutdown)
	}
	defer s.runs.Done()
	lease, err := s.acquire(ctx, name, s.opts.AcquireTimeout)
	if err != nil {
		return fmt.Errorf("scheduler: Trigger %q: %w", name, err)
	}
	defer release(lease)
	now := s.clock.Now()
	run := Run{Job: name, Tick: now, Manual: true, Owner: lease.Owner(), Token: lease.Token(), Start: now, Status: StatusRunning}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	if err := s.history.record(rctx, run, nil, 0); err != nil {
		cancel()
		return fmt.Errorf("scheduler: Trigger %q: record: %w", name, err)
	}
	cancel()
	parent, stop := context.WithCancel(ctx)
	defer stop()
	unhook := context.AfterFunc(s.hard, stop)
	defer unhook()
	log := s.log.With().Str("job", name).Time("tick", now).Bool("manual", true).Str("owner", lease.Owner()).Uint64("token", lease.Token()).Logger()
	s.execute(parent, e, &run, lease, nil, log)
	if run.Status != StatusSucceeded {
		return fmt.Errorf("scheduler: Trigger %q: %s: %s", name, run.Status, run.Error)
	}
	return nil
}
