package scheduler

import (
	"context"
	"time"

	"github.com/cronlock/cronlock/job"
)

// loop runs one job: catch up on a missed tick, then wait for each tick
// (plus the job's jitter) and try to run it; in between, take a rerun of an
// interrupted tick when one is offered, and catch up after an outage once
// NATS answers again. A run blocks the loop, so a replica never overlaps a
// job with itself; ticks that pass meanwhile are skipped on every replica
// (the lock is held) and recorded as missed (overlap) by the next claim.
func (s *Scheduler) loop(e *entry) {
	defer s.loops.Done()
	s.catchUp(e, ReasonNoReplica)
	var last time.Time // last tick this loop tried: never try one twice
	for {
		next := s.nextTick(e, last)
		if next.IsZero() {
			<-e.stop
			return
		}
		wait := next.Add(job.TickJitter(e.job.Name, next, e.job.Jitter)).Sub(s.now())
		timer := s.clock.NewTimer(max(wait, 0))
		select {
		case <-e.stop:
			timer.Stop()
			return
		case <-timer.Chan():
			last = next
			s.runTick(e, next, ReasonNoReplica)
		case <-e.rerun:
			timer.Stop()
			s.rerunTick(e)
		case <-s.outageRetry(e):
			timer.Stop()
			s.recover(e)
		}
	}
}

// nextTick is the job's first tick after now (server time) and after last.
func (s *Scheduler) nextTick(e *entry, last time.Time) time.Time {
	now := s.now()
	if now.Before(last) {
		now = last
	}
	next := e.sched.Next(now)
	e.mu.Lock()
	e.next = next
	e.mu.Unlock()
	return next
}

// catchUp runs the latest tick that no replica ran, if it is at most
// StartingDeadline old (Kubernetes' startingDeadlineSeconds), with gapReason
// for the ticks the claim records as missed. It reports whether NATS
// answered (so an outage is over).
func (s *Scheduler) catchUp(e *entry, gapReason Reason) bool {
	deadline := e.job.StartingDeadline
	if deadline <= 0 {
		return true
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.stateTimeout())
	st, _, err := s.history.read(ctx, e.job.Name) // repairing a record that cannot be trusted
	cancel()
	if err != nil {
		s.log.Warn().Err(err).Str("job", e.job.Name).Msg("catch-up: cannot read the job's history")
		return false
	}
	if st.LastTick.IsZero() || st.Suspended != nil || e.job.Suspended {
		return true // a new job: nothing was missed; a suspended one: nothing to run
	}
	now := s.now()
	from := st.LastTick
	if floor := now.Add(-deadline); !floor.Before(from) {
		from = floor.Add(-1) // latest counts ticks after from: include one exactly at the floor
	}
	tick := latest(e.sched, from, now)
	if tick.IsZero() {
		return true
	}
	s.log.Info().Str("job", e.job.Name).Time("tick", tick).Str("after", string(gapReason)).Msg("catching up on a missed tick within the starting deadline")
	return s.runTick(e, tick, gapReason)
}

// Outage recovery: a tick skipped because NATS failed marks the job's
// entry; the loop then retries the catch-up every recoverEvery until NATS
// answers, so the latest missed tick runs within about that much of the
// cluster being back (a stream leader elected, quorum regained, the
// connection re-established).
const recoverEvery = 100 * time.Millisecond

// outageRetry returns a channel that fires when the job's outage catch-up
// should be retried, or nil when there is no outage or nothing to catch up
// (no StartingDeadline): then the mark stays until the next claim, which
// records the ticks missed meanwhile as an outage.
func (s *Scheduler) outageRetry(e *entry) <-chan time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.outage || e.job.StartingDeadline <= 0 {
		return nil
	}
	return s.clock.After(recoverEvery)
}

// markOutage notes that NATS failed at a tick of the job.
func (e *entry) markOutage(on bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.outage = on
}

// recover retries the catch-up after an outage.
func (s *Scheduler) recover(e *entry) {
	if s.catchUp(e, ReasonOutage) {
		e.markOutage(false)
	}
}
