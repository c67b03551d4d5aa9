package scheduler

import (
	"context"
	"errors"
	"time"

	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/history"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/lock"
)

// runTick tries to run one tick: take the job's lock and claim the tick in
// one write of its state record, run the job under the lease, record the
// result and free the lock in another. A suspended job's tick is recorded
// as skipped instead. gapReason labels the ticks the claim finds missed
// before this one. It reports whether NATS answered (false: an outage,
// which the loop retries).
func (s *Scheduler) runTick(e *entry, tick time.Time, gapReason Reason) bool {
	name := e.job.Name
	log := s.log.With().Str("job", name).Time("tick", tick).Logger()
	if !s.beginRun() {
		s.skip(name, skipShutdown, nil, log)
		return true
	}
	defer s.runs.Done()
	if s.deferring() {
		s.skipDeferred(name, log)
		return true
	}
	if s.suspended(e) {
		return s.skipSuspended(e, tick, log)
	}
	if !s.matchesHere(e) {
		return s.notPlacedHere(e, tick, log)
	}
	if !s.followsHere(e) {
		s.skip(name, skipFollowers, nil, log)
		return true
	}
	if e.outageMarked() {
		gapReason = ReasonOutage
	}
	if e.job.Overlap == job.OverlapAllow {
		s.dropPlace(e) // its run takes a slot, not the record
		return s.runParallel(e, tick, gapReason, log)
	}
	run := Run{Job: name, Tick: tick, Start: s.plannedStart(e, tick), Status: StatusRunning}
	var c claimed
	req := claimRequest{sched: e.sched, run: run, definition: e.job.Definition, gapReason: gapReason, held: e.heldSince(), gone: s.ownerGone(s.ctx),
		queueFirst: e.job.Overlap == job.OverlapQueue || e.job.Overlap == job.OverlapReplace}
	lease, reason, err := s.lockTick(e, tick, claimChange(req, &c))
	if lease == nil {
		s.skip(name, reason, err, log)
		if reason == skipLocked && gapReason == ReasonOutage {
			// Right after an outage the lock may be held by this replica's
			// own take that NATS applied after the caller gave up (its
			// reply lost, the write sent on reconnect); unholdLater frees
			// it, or its lease ends. Keep the outage and retry: a replica
			// that holds it to run the tick claims it, which ends the
			// retries.
			return false
		}
		return s.answered(e, reason)
	}
	c.ok = true
	s.noteClaim(e, tick, lease)
	defer s.release(lease)
	defer s.slots.release()
	e.clearHeld(tick)
	for _, r := range c.recorded {
		s.result(r)
	}
	e.markOutage(false)
	log = log.With().Str("owner", lease.Owner()).Uint64("token", lease.Token()).Logger()
	s.reportClaim(c, log)
	if gapReason != ReasonNoReplica {
		log = log.With().Str("catch_up_after", string(gapReason)).Logger()
	}
	run = c.run
	s.awaitStart(lease, run.Start) // claimed ahead of the tick: see ahead.go
	s.runInGroup(s.hard, e, &run, lease, log)
	e.slot.ranUntil = run.End
	return true
}

// answered turns a skip reason into "NATS answered", marking an outage on
// the entry when it did not.
func (s *Scheduler) answered(e *entry, reason string) bool {
	if reason != skipError {
		return true
	}
	e.markOutage(true)
	return false
}

// rerunTick runs the job's pending rerun of an interrupted tick, if this
// replica takes the lock and the rerun first.
func (s *Scheduler) rerunTick(e *entry) {
	tick, ok := s.claims.rerun(e.job.Name)
	if !ok || s.deferring() || !s.matchesHere(e) || !s.beginRun() {
		return
	}
	defer s.runs.Done()
	name := e.job.Name
	log := s.log.With().Str("job", name).Time("tick", tick).Bool("rerun", true).Logger()
	run := Run{Job: name, Tick: tick, Start: s.now(), Status: StatusRunning}
	var p *history.Rerun
	var c claimed
	lease, reason, err := s.lockTick(e, time.Time{}, rerunChange(run, e.job.Definition, s.now(), s.ownerGone(s.ctx), &p, &c))
	if lease == nil {
		if reason != skipAlreadyRun {
			s.skip(name, reason, err, log)
		}
		return
	}
	defer s.release(lease)
	defer s.slots.release()
	run = c.run
	lease.interruptions = p.Interruptions
	log = log.With().Str("owner", lease.Owner()).Uint64("token", lease.Token()).Logger()
	s.runInGroup(s.hard, e, &run, lease, log)
	e.slot.ranUntil = run.End
}

// lockTick takes the job's lock for tick and makes change in the same
// write, after the spread delay and a run slot (Options.MaxConcurrentRuns),
// waiting only until another replica claims the tick (a zero tick: no such
// wait). Without a lease it returns the reason to skip; with one, the
// caller releases the slot. On a lease, c (filled by change) gets the
// state written.
func (s *Scheduler) lockTick(e *entry, tick time.Time, change func(*history.Record, *history.Hold) bool) (*heldLock, string, error) {
	name := e.job.Name
	if !tick.IsZero() && s.claims.covers(name, tick) {
		return nil, skipAlreadyRun, nil
	}
	actx, claimedElsewhere := context.WithCancel(s.ctx)
	defer claimedElsewhere()
	if !tick.IsZero() {
		defer s.claims.onClaim(name, tick, claimedElsewhere)()
	}
	if err := s.waitTurn(actx, e, tick); err != nil {
		return nil, s.cutShort(actx), nil
	}
	if h, held := s.legacyHeld(actx, name); held {
		s.slots.release()
		e.noteHeld(tick, &lock.NotAcquiredError{Key: name, Holder: h})
		return nil, skipLocked, &lock.NotAcquiredError{Key: name, Timeout: s.opts.AcquireTimeout, Holder: h}
	}
	if !e.usePlace() { // a place among the claims in flight (claimgate.go)
		if err := s.gate.enter(actx); err != nil {
			s.slots.release()
			return nil, s.cutShort(actx), nil
		}
	}
	started := time.Now()
	// A claim ahead of the tick waits for a held record as long as a claim
	// at the tick would.
	timeout := s.opts.AcquireTimeout + s.untilStart(e, tick)
	res, err := s.take(actx, takeRequest{name: name, timeout: timeout, change: change, claims: tick})
	s.gate.leave()
	result, reason := "acquired", ""
	switch {
	case err == nil && res.outcome == taken:
	case err == nil: // refused: the tick (or the rerun) was claimed already, or the job is suspended
		result, reason = "not_acquired", skipAlreadyRun
	case actx.Err() != nil && s.ctx.Err() == nil:
		result, reason = "not_acquired", skipAlreadyRun // claimed by another replica while waiting
	case errors.Is(err, lock.ErrNotAcquired):
		result, reason = "not_acquired", skipLocked
		e.noteHeld(tick, err)
	case s.ctx.Err() != nil:
		result, reason = "error", skipShutdown
	default:
		result, reason = "error", skipError
	}
	s.m.acquire.WithLabelValues(result).Observe(time.Since(started).Seconds())
	if res.lock == nil {
		s.slots.release()
		return nil, reason, err
	}
	return res.lock, reason, nil
}

// cutShort is the skip reason when waiting for a turn ended early.
func (s *Scheduler) cutShort(actx context.Context) string {
	if s.ctx.Err() != nil {
		return skipShutdown
	}
	return skipAlreadyRun
}

// skip counts and logs a tick this replica does not run.
func (s *Scheduler) skip(name, reason string, err error, log zerolog.Logger) {
	s.m.skipped.WithLabelValues(name, reason).Inc()
	switch reason {
	case skipAlreadyRun:
		log.Debug().Msg("tick skipped: already claimed by another replica")
	case skipLocked:
		log.Debug().Err(err).Msg("tick skipped: the job's lock is held (its previous run, or another replica)")
	case skipError:
		log.Warn().Err(err).Msg("tick skipped: NATS failed")
	}
}

// skipSuspended records a suspended job's tick as skipped (once across
// replicas). It reports whether NATS answered.
func (s *Scheduler) skipSuspended(e *entry, tick time.Time, log zerolog.Logger) bool {
	if s.claims.covers(e.job.Name, tick) {
		s.skip(e.job.Name, skipAlreadyRun, nil, log)
		return true
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.stateTimeout())
	defer cancel()
	recorded, err := s.history.skip(ctx, e.sched, e.job.Name, tick, ReasonSuspended)
	switch {
	case err != nil:
		s.skip(e.job.Name, skipError, err, log)
		return s.answered(e, skipError)
	case recorded:
		s.m.skipped.WithLabelValues(e.job.Name, string(ReasonSuspended)).Inc()
		log.Debug().Msg("tick skipped: the job is suspended")
	default:
		s.skip(e.job.Name, skipAlreadyRun, nil, log)
	}
	return true
}

// reportClaim logs and counts the ticks a claim found missed.
func (s *Scheduler) reportClaim(c claimed, log zerolog.Logger) {
	for reason, n := range c.missed {
		s.m.missed.WithLabelValues(c.run.Job, string(reason)).Add(float64(n))
		switch reason {
		case ReasonOverlap:
			log.Info().Int("ticks", n).Str("reason", string(reason)).Msg("ticks skipped: the job's previous run was still running")
		case ReasonOutage:
			log.Warn().Int("ticks", n).Str("reason", string(reason)).Msg("ticks missed: replicas could not coordinate through NATS")
		case ReasonLockHeld:
			log.Warn().Int("ticks", n).Str("reason", string(reason)).Msg("ticks missed: the job's lock was held by a holder that did not run them, until its lease ended")
		default:
			log.Warn().Int("ticks", n).Str("reason", string(reason)).Msg("ticks missed: no replica was running")
		}
	}
}

// release frees a lease with a bounded wait. If NATS does not take it, the
// lock keeps trying once NATS answers (and the server's TTL frees the key
// at the latest); the failure is logged, since every replica waits for it.
func (s *Scheduler) release(lease *heldLock) {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	if err := lease.Release(ctx); err != nil {
		s.log.Warn().Err(err).Str("owner", lease.Owner()).Uint64("token", lease.Token()).Msg("cannot release the lock")
	}
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
