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
		s.m.skipped.WithLabelValues(name, skipShutdown).Inc()
		return
	}
	defer s.runs.Done()

	if s.claims.covers(name, tick) {
		s.m.skipped.WithLabelValues(name, skipAlreadyRun).Inc()
		return
	}
	// Wait for the lock only until another replica claims the tick.
	actx, claimedElsewhere := context.WithCancel(s.ctx)
	stopWatching := s.claims.onClaim(name, tick, claimedElsewhere)
	started := time.Now()
	lease, err := s.locker.Acquire(actx, name, lock.WithTimeout(s.opts.AcquireTimeout))
	stopWatching()
	claimedElsewhere()
	switch {
	case err != nil && actx.Err() != nil && s.ctx.Err() == nil:
		s.m.acquire.WithLabelValues("not_acquired").Observe(time.Since(started).Seconds())
		s.m.skipped.WithLabelValues(name, skipAlreadyRun).Inc()
		log.Debug().Msg("tick skipped: claimed by another replica while waiting for the lock")
		return
	case errors.Is(err, lock.ErrNotAcquired):
		s.m.acquire.WithLabelValues("not_acquired").Observe(time.Since(started).Seconds())
		s.m.skipped.WithLabelValues(name, skipLocked).Inc()
		log.Debug().Err(err).Msg("tick skipped: another replica holds the lock")
		return
	case err != nil:
		s.m.acquire.WithLabelValues("error").Observe(time.Since(started).Seconds())
		reason := skipError
		if s.ctx.Err() != nil {
			reason = skipShutdown
		}
		s.m.skipped.WithLabelValues(name, reason).Inc()
		if reason == skipError {
			log.Warn().Err(err).Msg("tick skipped: cannot acquire the lock")
		}
		return
	}
	s.m.acquire.WithLabelValues("acquired").Observe(time.Since(started).Seconds())
	defer lease.Close() // after the run has returned and its result is recorded

	log = log.With().Str("owner", lease.Owner()).Uint64("token", lease.Token()).Logger()
	run := Run{Job: name, Tick: tick, Owner: lease.Owner(), Token: lease.Token(), Start: s.clock.Now(), Status: StatusRunning}
	ctx, cancel := context.WithTimeout(s.hard, s.opts.AcquireTimeout*4)
	claimed, missed, highest, st, rev, err := s.history.claim(ctx, e.sched, run)
	cancel()
	switch {
	case err != nil:
		s.m.skipped.WithLabelValues(name, skipError).Inc()
		log.Warn().Err(err).Msg("tick skipped: cannot claim it in the history")
		return
	case !claimed:
		s.m.skipped.WithLabelValues(name, skipAlreadyRun).Inc()
		log.Debug().Msg("tick skipped: already run")
		return
	}
	if claimed && lease.Token() <= highest {
		// Tokens grow with the lock stream's sequence; a lower one means
		// NATS lost acknowledged writes (e.g. servers killed without
		// sync_interval: always). Fencing at the resource still holds; say
		// it loudly.
		log.Error().Uint64("highest_token", highest).Msg("fencing token went backwards: the NATS lock stream lost acknowledged writes; check the servers' sync_interval and recent crashes")
	}
	if missed > 0 {
		s.m.missed.WithLabelValues(name).Add(float64(missed))
		log.Warn().Int("missed", missed).Msg("ticks ran on no replica")
	}
	if catchUp {
		log = log.With().Bool("catch_up", true).Logger()
	}
	s.execute(s.hard, e, &run, lease, &st, rev, log)
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
// regardless of the lease (shutdown after the grace, a Trigger's caller).
// st and rev are the job's shared state as last written by this run's
// claim (nil, 0 if unknown), to record the result without a read.
func (s *Scheduler) execute(parent context.Context, e *entry, run *Run, lease *lock.Lease, st *jobState, rev uint64, log zerolog.Logger) {
	name := e.job.Name
	e.mu.Lock()
	e.running++
	e.mu.Unlock()
	s.m.running.WithLabelValues(name).Inc()
	defer func() {
		s.m.running.WithLabelValues(name).Dec()
		e.mu.Lock()
		e.running--
		r := *run
		e.last = &r
		e.mu.Unlock()
	}()

	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	lost := make(chan struct{})
	go func() { // the lease's loss cancels the run
		select {
		case <-lease.Done():
			if lease.Err() != nil {
				cancel(lock.ErrLeaseLost)
			}
		case <-ctx.Done():
		}
		close(lost)
	}()
	defer func() { cancel(nil); <-lost }()

	log.Info().Msg("run started")
	err := s.attempts(ctx, e, run, lease)
	run.End = s.clock.Now()
	cause := context.Cause(ctx)
	switch {
	case err == nil:
		run.Status = StatusSucceeded
	case errors.Is(cause, lock.ErrLeaseLost):
		run.Status = StatusLost
		s.m.lost.WithLabelValues(name).Inc()
	case parent.Err() != nil:
		run.Status = StatusCancelled
	case errors.Is(err, errTimeout):
		run.Status = StatusTimeout
	default:
		run.Status = StatusFailed
	}
	if err != nil {
		run.Error = err.Error()
	}

	// Record the result even if the lease is gone: it is this run's entry.
	rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
	if herr := s.history.record(rctx, *run, st, rev); herr != nil {
		log.Warn().Err(herr).Msg("cannot record the run in the history")
	}
	rcancel()

	s.m.runs.WithLabelValues(name, run.Status).Inc()
	s.m.duration.WithLabelValues(name).Observe(run.Duration().Seconds())
	ev := log.Info()
	switch run.Status {
	case StatusSucceeded:
		s.m.lastSuccess.WithLabelValues(name).Set(float64(run.End.Unix()))
	case StatusLost:
		ev = log.Error()
	default:
		ev = log.Warn()
	}
	ev = ev.Str("status", run.Status).Dur("duration", run.Duration()).Int("attempts", run.Attempts)
	if run.Error != "" {
		ev = ev.Str("error", run.Error)
	}
	ev.Msg("run finished")
}

// attempts calls Run up to 1+Retries times, with RetryBackoff between
// attempts, while ctx (lease, shutdown) allows.
func (s *Scheduler) attempts(ctx context.Context, e *entry, run *Run, lease *lock.Lease) error {
	j := e.job
	var err error
	for attempt := 1; attempt <= 1+j.Retries; attempt++ {
		run.Attempts = attempt
		info := job.RunInfo{Job: j.Name, Tick: run.Tick, Attempt: attempt, Owner: lease.Owner(), Token: lease.Token()}
		err = s.attempt(job.NewContext(ctx, info), j)
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
	lease, err := s.locker.Acquire(ctx, name, lock.WithTimeout(s.opts.AcquireTimeout))
	if err != nil {
		return fmt.Errorf("scheduler: Trigger %q: %w", name, err)
	}
	defer lease.Close()
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
	s.execute(parent, e, &run, lease, nil, 0, log)
	if run.Status != StatusSucceeded {
		return fmt.Errorf("scheduler: Trigger %q: %s: %s", name, run.Status, run.Error)
	}
	return nil
}
