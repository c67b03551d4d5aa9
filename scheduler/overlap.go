package scheduler

import (
	"context"
	"time"

	"github.com/cronlock/cronlock/internal/history"
	"github.com/cronlock/cronlock/job"
)

// Overlap policies (job.Overlap) other than skip are carried out by the
// replica running the job, which is the one that knows a tick came while
// it runs, whether the job has one replica or many: at each tick during
// the run it writes the tick into the job's record as the queued one
// (history.Record.Queued, history.QueuedHeader), and under replace it also cancels its
// own run (recorded cancelled, reason replaced). When the result's write
// frees the lock, every replica's watch sees a queued tick on a free
// record and offers it to the job's loop, which runs it as the tick it is:
// its claim's compare-and-swap on the last claimed tick makes it run once,
// and records the ticks before it that came during the run as missed
// (overlap). A newer claim, of the queued tick or a later one, drops it.
//
// A holder that dies queues nothing more; the job's next tick takes its
// lock over once its lease ends, as under skip.

// dropStaleQueued drops a queued tick that a claim has reached.
func dropStaleQueued(st *history.Record) {
	if !st.Queued.IsZero() && !st.Queued.After(st.LastTick) {
		st.Queued = time.Time{}
	}
}

// startOverlap starts followOverlap for the run, unless the job's policy
// is skip; the returned function stops it and waits for it.
func (s *Scheduler) startOverlap(ctx context.Context, e *entry, tick time.Time, lease *heldLock, stop func(error)) func() {
	if e.job.Overlap == job.OverlapSkip || e.job.Overlap == job.OverlapAllow {
		return func() {} // allow starts each tick on its own (parallel.go)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.followOverlap(ctx, e, tick, lease, stop)
	}()
	return func() {
		cancel()
		<-done
	}
}

// followOverlap carries out the job's overlap policy while the run of
// tick under lease goes on (until ctx is done): at each of the job's ticks
// it queues the tick and, under replace, calls stop.
func (s *Scheduler) followOverlap(ctx context.Context, e *entry, tick time.Time, lease *heldLock, stop func(error)) {
	policy := e.job.Overlap
	if q := lease.written.Queued; policy == job.OverlapReplace && q.After(tick) {
		// Claimed while a newer tick was already waiting (see claimChange's
		// queueFirst): that tick replaces this run at once.
		stop(&CancelledError{By: lease.Owner(), Reason: ReasonReplaced})
		return
	}
	after := s.now()
	if tick.After(after) {
		after = tick
	}
	for {
		next := e.sched.Next(after)
		if next.IsZero() {
			return
		}
		t := s.clock.NewTimer(next.Sub(s.now()))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.Chan():
		}
		after = next
		s.queueTick(ctx, e.job.Name, next, lease)
		if policy == job.OverlapReplace {
			stop(&CancelledError{By: lease.Owner(), Reason: ReasonReplaced})
			return
		}
	}
}

// queueTick records tick as the job's queued tick, while the record holds
// lease.
func (s *Scheduler) queueTick(ctx context.Context, name string, tick time.Time, lease *heldLock) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.stateTimeout())
	defer cancel()
	_, _, err := s.history.update(ctx, name, nil, 0, func(st *history.Record) bool {
		if st.Holder == nil || st.Holder.Lease != lease.id || !tick.After(st.LastTick) || !tick.After(st.Queued) {
			return false
		}
		st.Queued = tick
		return true
	})
	// Whatever the write did, the result's write queues the tick too (it is
	// retried until NATS takes it), so a write that lost its compare-and-swap
	// races or met a slow NATS loses no queued tick.
	lease.keepQueued(tick)
	if err != nil {
		s.log.Info().Err(err).Str("job", name).Time("tick", tick).Msg("cannot queue the tick now; the run's result will queue it")
		return
	}
	s.log.Debug().Str("job", name).Time("tick", tick).Msg("tick queued: it runs when the job's run ends")
}

// keepQueued notes tick as the latest tick to queue with the result.
func (l *heldLock) keepQueued(tick time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if tick.After(l.queued) {
		l.queued = tick
	}
}

// queuedForResult is the tick the result's write queues (zero: none).
func (l *heldLock) queuedForResult() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.queued
}

// queuedTick returns the job's queued tick if the watch shows one on a
// free record.
func (c *claims) queuedTick(name string) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := c.views[name]
	return v.queued, !v.queued.IsZero() && v.holder == "" && v.queued.After(v.lastTick)
}

// runQueued runs the job's queued tick, if it is still on offer.
func (s *Scheduler) runQueued(e *entry) {
	tick, ok := s.claims.queuedTick(e.job.Name)
	if !ok {
		return
	}
	s.log.Debug().Str("job", e.job.Name).Time("tick", tick).Msg("running the tick queued while the job ran")
	s.runTick(e, tick, ReasonNoReplica)
}
