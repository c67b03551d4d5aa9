package scheduler

import (
	"math"
	"sync"
	"time"

	"github.com/cronlock/cronlock/job"
)

// Claiming ahead. A tick's claim is a compare-and-swap that the NATS server
// stores, and fans out to every replica, before the run may start. The jobs
// due at one second are claimed at once, so at the tick the last of a
// hundred claims waited for the ninety-nine before it: the start delay was
// 11 ms at the median at 100 job-ticks/s, with one replica as with three.
// A job whose tick needs nothing but its record is therefore woken
// ahead of the tick (plus its jitter) when this replica's claims are slow.
// It waits for its turn, takes its record and claims the tick then, and
// its run starts at the tick by the NATS server's clock, which is the
// start the claim records. Quartz acquires its triggers ahead of their
// fire time for the same reason.
//
// What runs does not change: the claim is the same write, made earlier,
// so at most once holds as before, and a tick is still never started
// before it is due. The cost is that the job's record is held from the
// claim: a replica that dies, freezes or loses NATS in the lead before a
// tick it claimed holds that job until its lease ends, as if that had
// happened during the run, where a replica idle at the tick would have
// left it to the others; its run is recorded abandoned or lost. So the
// lead is only as long as the claims need, and zero when they are quick:
//   - it is twice the longest recent claim of this replica (from the wake
//     to the stored claim), decaying with claimPaceHalfLife,
//     at most maxClaimAhead (1,000 job-ticks/s on three replicas and two
//     cores: claims took a few hundred ms);
//   - only the replica a job is dealt to (spread.go) claims it ahead; the
//     others take their turns from the tick, as before;
//   - below minClaimAhead it is zero: a claim that quick starts the run
//     about as soon at the tick, and holding the record for it only
//     exposes the tick to a fault in the lead.
//
// Because the pace decays with time, jobs that come due together only
// once a minute or less often find it decayed and claim at the tick, as
// before: their start waits for the claims of the others (about 11 ms for
// the last of a hundred on two cores). Leading them too would need the
// lead to follow how many jobs share the tick, not the recent past.
//
// A replica frozen in the lead past its lease does not start the run it
// claimed when it wakes: another replica may have run later ticks by then
// (execute, startBlocked: the local safe deadline).
//
// Only jobs with no other condition on their start claim ahead:
//   - overlap skip: queue and replace act on the run still in progress at
//     the tick, and allow takes a run slot rather than the record;
//   - no concurrency group: a group's slot is taken at the start, and a
//     claim ahead would hold it, or wait for it, for nothing.
//
// A record still held by the job's previous run is waited for until
// AcquireTimeout after the tick, as a claim at the tick would wait
// (untilStart); a graceful shutdown during the wait still runs the claimed
// tick (it is no one else's now); the lease's loss, a cancel request or
// the end of the shutdown's grace ends the wait, and the run is recorded
// without starting (execute, startBlocked); a suspension delivered in the
// lead records the tick skipped, as a claim after it would have
// (suspendedBeforeStart).
const (
	minClaimAhead = 10 * time.Millisecond
	maxClaimAhead = 500 * time.Millisecond
	// claimPaceHalfLife: the longest recent claim counts half after this.
	claimPaceHalfLife = 10 * time.Second
	// claimStalled: a claim that took longer waited for NATS (a stream
	// leader's election, a reconnect), not for the claims before it, and
	// says nothing of the lead the next ticks need; counted, it held
	// records 500 ms ahead for a minute after every NATS fault.
	claimStalled = time.Second
)

// claimsAhead reports whether job j's ticks may be claimed ahead.
func claimsAhead(j job.Job) bool {
	return j.Overlap == job.OverlapSkip && j.Group.Name == ""
}

// ahead is how long before its tick (plus jitter) job j is woken to claim
// it; zero for a job that claims at the tick.
func (s *Scheduler) ahead(j job.Job) time.Duration {
	if !claimsAhead(j) {
		return 0
	}
	return s.pace.lead(s.now())
}

// wakeFor is when e is woken for tick: the tick plus the job's jitter,
// less the lead.
func (s *Scheduler) wakeFor(e *entry, tick time.Time) time.Time {
	return tick.Add(job.TickJitter(e.job.Name, tick, e.job.Jitter) - s.ahead(e.job))
}

// noteClaim tells the pace how long e's claim of tick, under lease, took
// from its wake for it, if e may claim ahead (whether or not it did this
// time), this replica is the one the job is dealt to (another's time
// includes its wait for its turn, spread.go), and the claim did not wait
// for a previous run to end.
func (s *Scheduler) noteClaim(e *entry, tick time.Time, lease *heldLock) {
	if !claimsAhead(e.job) || lease.waited || e.slot.kind != wakeTick || !e.slot.tick.Equal(tick) {
		return
	}
	if live := s.liveFor(e); len(live) > 1 && s.rank(e.job.Name, live, tick) > 0 {
		return
	}
	now := s.now()
	s.pace.observe(now, now.Sub(time.Unix(0, e.slot.at)))
}

// claimPace tracks how long this replica's claims take, from the wake to
// the stored claim: the longest, decaying with claimPaceHalfLife.
type claimPace struct {
	mu    sync.Mutex
	worst time.Duration
	at    time.Time // when worst was observed
}

// observe notes a claim that took took, at now; one longer than
// claimStalled is left out.
func (p *claimPace) observe(now time.Time, took time.Duration) {
	if took > claimStalled {
		return
	}
	took = min(took, maxClaimAhead)
	p.mu.Lock()
	defer p.mu.Unlock()
	if took >= p.decayed(now) {
		p.worst, p.at = took, now
	}
}

// lead is the lead to claim with at now: twice the recent longest claim,
// at most maxClaimAhead, and zero below minClaimAhead.
func (p *claimPace) lead(now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	lead := min(2*p.decayed(now), maxClaimAhead)
	if lead < minClaimAhead {
		return 0
	}
	return lead
}

// decayed is worst at now; call with mu held.
func (p *claimPace) decayed(now time.Time) time.Duration {
	if p.worst == 0 {
		return 0
	}
	halves := float64(now.Sub(p.at)) / float64(claimPaceHalfLife)
	return time.Duration(float64(p.worst) * math.Exp2(-max(halves, 0)))
}

// plannedStart is when the run of e's tick starts: the tick plus the
// job's jitter, or now if that has passed.
func (s *Scheduler) plannedStart(e *entry, tick time.Time) time.Time {
	now := s.now()
	if tick.IsZero() {
		return now
	}
	return later(now, tick.Add(job.TickJitter(e.job.Name, tick, e.job.Jitter)))
}

// untilStart is how long from now until the run of e's tick starts (zero
// when it is due).
func (s *Scheduler) untilStart(e *entry, tick time.Time) time.Duration {
	return max(0, s.plannedStart(e, tick).Sub(s.now()))
}

// awaitStart waits until start by the scheduler's clock, or until the
// lease is lost, a cancel request reaches the run or the shutdown's grace
// ends; the run is then recorded lost or cancelled without starting
// (execute, startBlocked).
func (s *Scheduler) awaitStart(lease *heldLock, start time.Time) {
	d := start.Sub(s.now())
	if d <= 0 {
		return
	}
	t := s.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.Chan():
	case <-lease.Context().Done():
	case <-lease.Cancelled().Done():
	case <-s.hard.Done():
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
