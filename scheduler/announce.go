package scheduler

import (
	"context"
	"slices"
	"time"
)

// announceEvery refreshes the replica's announcement well within its TTL.
const announceEvery = ReplicaTTL / 3

// announce keeps this replica's announcement fresh until ctx is done,
// watching the others' (for the load spreading) and the clock offset.
func (s *Scheduler) announce(ctx context.Context) {
	if err := s.registry.Watch(ctx); err != nil {
		s.log.Warn().Err(err).Msg("cannot follow the replicas; every replica tries every tick at once")
	}
	t := time.NewTicker(announceEvery) // real time, whatever Options.Clock is
	defer t.Stop()
	warned := false
	for {
		actx, cancel := context.WithTimeout(ctx, announceEvery)
		err := s.registry.Announce(actx, s.runningJobs())
		if ctx.Err() == nil {
			s.health.Note(err, time.Now())
		}
		if err != nil && ctx.Err() == nil {
			s.log.Debug().Err(err).Msg("cannot announce this replica")
		}
		cancel()
		warned = s.reportOffset(warned)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// reportOffset sets the clock offset gauge and warns once when the offset
// goes over offsetWarn. It returns whether the warning stands.
func (s *Scheduler) reportOffset(warned bool) bool {
	d, ok := s.offset.Get()
	if !ok {
		return warned
	}
	s.m.clockOffset.Set(d.Seconds())
	big := d > offsetWarn || d < -offsetWarn
	if big && !warned {
		s.log.Warn().Float64("offset_seconds", d.Seconds()).Msg("this host's clock differs from the NATS server's by over a second; ticks follow the server's clock")
	}
	return big
}

// awaitClock waits, briefly, for the first estimate of the server clock's
// offset, so that a replica whose clock is off does not start its first
// ticks early or late. Without NATS it goes on with its own clock.
func (s *Scheduler) awaitClock(ctx context.Context) {
	if s.opts.LocalClock {
		return
	}
	t := s.clock.NewTimer(clockWait)
	defer t.Stop()
	select {
	case <-s.registry.Sampled():
	case <-t.Chan():
		s.log.Warn().Msg("no estimate of the NATS server's clock yet; scheduling on this host's clock until there is one")
	case <-ctx.Done():
	}
}

// runningJobs lists the jobs with a run in progress here, sorted. It runs
// at every announcement: it reads each entry's count, without building the
// status of every job as Jobs does (100,000 of them every announceEvery).
func (s *Scheduler) runningJobs() []string {
	var out []string
	for _, e := range s.entries() {
		e.mu.Lock()
		if e.running > 0 {
			out = append(out, jobOf(e.job.Name)) // an every_replica job by its own name
		}
		e.mu.Unlock()
	}
	slices.Sort(out)
	return out
}
