package scheduler

import (
	"context"
	"time"

	"github.com/jonboulle/clockwork"
)

// Scheduling without a goroutine per job. An idle job waits in the timer
// queue (timers.go) for its next tick (plus the job's jitter), or for its
// outage retry; one dispatcher goroutine sleeps until the earliest and hands
// each due job to a goroutine of its own, which tries the tick, then puts
// the job back in the queue. In between, a rerun of an interrupted tick is
// taken when one is offered, and the catch-up is retried after an outage
// once NATS answers again. A job is in the queue or busy, never both, so a
// replica never overlaps a job with itself; ticks that pass during a run are
// skipped on every replica (the lock is held) and recorded as missed
// (overlap) by the next claim.

// startLoop begins scheduling e: its catch-up (on a goroutine, when it has
// a StartingDeadline), then its ticks.
func (s *Scheduler) startLoop(e *entry) {
	q := s.timers
	q.mu.Lock()
	if q.closed || e.slot.stopped || e.slot.busy || e.slot.started {
		q.mu.Unlock()
		return
	}
	e.slot.busy, e.slot.started = true, true
	q.mu.Unlock()
	first := func() { s.catchUp(e, ReasonNoReplica) }
	if e.job.StartingDeadline <= 0 {
		first = s.reschedule(e) // nothing to catch up: queue it now, without a goroutine
	}
	if first != nil {
		s.work(e, first)
	}
}

// work runs f for the busy entry e on a worker (workers.go), then what
// reschedule hands back, until e is queued again (or stopped). It reports
// whether f will run (not once the scheduler has shut down).
func (s *Scheduler) work(e *entry, f func()) bool {
	q := s.timers
	q.mu.Lock()
	if q.closed {
		e.slot.busy = false
		q.mu.Unlock()
		return false
	}
	s.loops.Add(1) // under q.mu, before shutdown's Wait
	q.mu.Unlock()
	s.workers.run(func() {
		defer s.loops.Done()
		for f != nil {
			f()
			s.dropPlace(e)
			f = s.reschedule(e)
		}
	})
	return true
}

// startClaim starts e's tick work f holding a place among the claims in
// flight (claimgate.go). When it waited for the place, it first drops the
// tick if the job was removed meanwhile (a reload), and skips it without a
// worker if the watch has delivered another replica's claim of it (the
// dispatcher looked for both just before the offer).
func (s *Scheduler) startClaim(e *entry, f func(), waited bool) bool {
	if waited && s.goneWhileWaiting(e) {
		return false
	}
	if tick := e.slot.tick; waited && s.skipClaimed(e, tick) {
		e.slot.last = tick
		if g := s.reschedule(e); g != nil {
			s.work(e, g)
		}
		return false
	}
	e.slot.placed = true
	if !s.work(e, f) {
		e.slot.placed = false
		return false
	}
	return true
}

// goneWhileWaiting reports whether e's job was removed, or the scheduler
// shut down, while its tick waited for a place; e is then no longer busy.
func (s *Scheduler) goneWhileWaiting(e *entry) bool {
	q := s.timers
	q.mu.Lock()
	defer q.mu.Unlock()
	if e.slot.stopped || q.closed {
		e.slot.busy = false
		return true
	}
	return false
}

// usePlace hands e's place among the claims in flight, if its work holds
// one, to the claim about to be sent (which leaves the gate once
// answered), and reports whether it did.
func (e *entry) usePlace() bool {
	p := e.slot.placed
	e.slot.placed = false
	return p
}

// dropPlace gives back the place e's work holds, if its claim did not
// use it (the tick was skipped before the claim).
func (s *Scheduler) dropPlace(e *entry) {
	if e.usePlace() {
		s.gate.leave()
	}
}

// reschedule ends the busy entry e's work in hand: it returns the next work
// to do at once (a rerun offered meanwhile), or queues e for its next tick
// or outage retry and returns nil. A stopped e, or one whose schedule has no
// further tick, is left out of the queue.
func (s *Scheduler) reschedule(e *entry) func() {
	tick := s.nextTick(e, e.slot.last)
	at, kind := s.wakeFor(e, tick), wakeTick
	if retry, ok := s.outageRetry(e); ok && retry.Before(at) {
		at, kind = retry, wakeRecover
	}
	q := s.timers
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case e.slot.stopped || q.closed:
	case e.slot.pending&offerRerun != 0:
		e.slot.pending &^= offerRerun
		return func() { s.rerunTick(e) }
	case e.slot.pending&offerQueued != 0:
		e.slot.pending &^= offerQueued
		return func() { s.runQueued(e) }
	case e.slot.pending&offerBackfill != 0:
		e.slot.pending &^= offerBackfill
		return func() { s.runBackfill(e) }
	case !tick.IsZero():
		e.slot.at, e.slot.kind, e.slot.tick = at.UnixNano(), kind, tick
		q.push(e)
	}
	e.slot.busy = false
	return nil
}

// dispatch wakes the queued jobs as they fall due, until ctx is done.
func (s *Scheduler) dispatch(ctx context.Context) {
	defer s.loops.Done()
	q := s.timers
	for {
		due, wait, ok := q.popDue(s.now())
		for _, e := range due {
			switch f, claim := s.wakeWork(e); {
			case f == nil:
			case claim:
				s.gate.offer(func(waited bool) bool { return s.startClaim(e, f, waited) })
			default:
				s.work(e, f)
			}
		}
		var t clockwork.Timer
		var fire <-chan time.Time
		if ok {
			t = s.clock.NewTimer(wait)
			fire = t.Chan()
		}
		select {
		case <-ctx.Done():
		case <-q.wake:
		case <-fire:
		}
		if t != nil {
			t.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// wakeWork is what a job taken out of the queue does on a worker: try its
// tick (never one tick twice; claim: it waits for a place among the claims
// in flight first), or retry its catch-up after an outage. It returns nil
// when the dispatcher has dealt with the job itself: queued it again for
// its turn at the tick (queueTurn), or skipped a tick another replica has
// claimed (skipClaimed); then it hands back what reschedule does, the
// work offered meanwhile if any.
func (s *Scheduler) wakeWork(e *entry) (f func(), claim bool) {
	switch e.slot.kind {
	case wakeRecover:
		return func() { s.recover(e) }, false
	case wakeTick:
		if s.queueTurn(e) {
			return nil, false
		}
	}
	tick := e.slot.tick
	if s.skipClaimed(e, tick) {
		e.slot.last = tick
		return s.reschedule(e), false
	}
	return func() {
		e.slot.last = tick
		s.runTick(e, tick, ReasonNoReplica)
	}, true
}

// offerKind is work the watch offers a job besides its ticks (a set of
// bits: both can be on offer).
type offerKind uint8

const (
	offerRerun    offerKind = 1 << iota // a rerun of an interrupted tick
	offerQueued                         // a tick queued while the job ran (overlap.go)
	offerBackfill                       // the next tick of a backfill (backfill.go)
)

// offer takes work the watch offers e: at once if e is queued, else once
// its work in hand is done.
func (s *Scheduler) offer(e *entry, kind offerKind) {
	q := s.timers
	q.mu.Lock()
	switch {
	case q.closed || e.slot.stopped:
		q.mu.Unlock()
		return
	case e.slot.busy || e.slot.index < 0 || e.slot.kind == wakeTurn:
		// On offer: taken after the work in hand (a tick waiting for its
		// turn is work in hand), or at the start.
		e.slot.pending |= kind
		q.mu.Unlock()
		return
	}
	q.remove(e)
	e.slot.busy = true
	q.mu.Unlock()
	run := s.rerunTick
	switch kind {
	case offerQueued:
		run = s.runQueued
	case offerBackfill:
		run = s.runBackfill
	}
	s.work(e, func() { run(e) })
}

// stopLoop stops scheduling e; work in hand (a run) finishes.
func (s *Scheduler) stopLoop(e *entry) {
	q := s.timers
	q.mu.Lock()
	defer q.mu.Unlock()
	e.slot.stopped = true
	q.remove(e)
}

// stopLoops stops scheduling every job, for a shutdown: nothing starts from
// then on.
func (s *Scheduler) stopLoops() {
	q := s.timers
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	for _, e := range q.items {
		e.slot.stopped, e.slot.index = true, -1
	}
	q.items = nil
	q.poke()
}

// lateAfterRun bounds how late a tick that fell due after the job's last
// run ended (while its result was being written and the lock freed) may
// still start; an older one is left to the next claim to record missed.
const lateAfterRun = 5 * time.Second

// nextTick is the job's first tick after now (server time) and after last,
// except that a tick that fell due after the job's last run here ended
// (e.slot.ranUntil) runs late rather than being missed: the run no longer
// held the job then (the claims record such a tick as no overlap), and
// this replica, the one alive and free to run it, was only writing the
// result. Of several such ticks the latest runs.
func (s *Scheduler) nextTick(e *entry, last time.Time) time.Time {
	now := s.now()
	if now.Before(last) {
		now = last
	}
	next := e.sched.Next(now)
	if ended := e.slot.ranUntil; !ended.IsZero() {
		e.slot.ranUntil = time.Time{}
		if ended.After(last) && now.Sub(ended) < lateAfterRun {
			if late := latest(e.sched, ended.Add(-time.Nanosecond), now); !late.IsZero() {
				next = late
			}
		}
	}
	e.mu.Lock()
	e.next = next
	e.mu.Unlock()
	s.due.note(next, e.job.Name)
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
	if (st.LastTick.IsZero() && !e.job.OneOff()) || st.Suspended != nil || e.job.Suspended {
		// A new job: nothing was missed (but a one-off that has not run is
		// always new, and its one tick may have been); a suspended one:
		// nothing to run.
		return true
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

// outageRetry is when the job's outage catch-up should be retried, or
// false when there is no outage or nothing to catch up (no
// StartingDeadline): then the mark stays until the next claim, which
// records the ticks missed meanwhile as an outage.
func (s *Scheduler) outageRetry(e *entry) (time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.outage || e.job.StartingDeadline <= 0 {
		return time.Time{}, false
	}
	return s.now().Add(recoverEvery), true
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
