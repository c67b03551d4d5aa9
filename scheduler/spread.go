package scheduler

import (
	"context"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// Spreading load over replicas. At a tick, every replica's loop for every
// due job fires at once; without help the fastest replica wins most locks.
// Instead each replica computes the same assignment of the jobs due at the
// tick to the live replicas (registry), balanced by count: the assigned
// replica tries at once, the others one spreadStep later per rank, so they
// take over only when it does not claim the tick. A replica also waits a
// busyStep per run of an earlier tick it still has in progress, up to
// maxBusySteps: a busy replica yields to a less busy one, while a fleet that
// is busy everywhere pays at most 50 ms. An idle fleet, or a lone replica,
// keeps its tick-to-start delay: the assigned replica does not wait.
const (
	// maxLateToSpread: the replica a job is dealt to, when it reaches a
	// tick later than this (its CPU is saturated), tries at once, as
	// without spreading (spreadWait).
	maxLateToSpread = 100 * time.Millisecond
	spreadStep      = 20 * time.Millisecond
	busyStep        = 5 * time.Millisecond
	maxBusySteps    = 10
)

// waitTurn waits for this replica's turn at the job's tick (unless the job
// waited for it in the timer queue: queueTurn), then for a run slot
// (Options.MaxConcurrentRuns). It returns ctx's error if ctx ends first;
// then no slot is held.
func (s *Scheduler) waitTurn(ctx context.Context, e *entry, tick time.Time) error {
	if !s.turnTaken(e, tick) {
		if err := s.sleep(ctx, s.spreadDelay(e, tick)); err != nil {
			return err
		}
	}
	return s.slots.acquire(ctx)
}

// sleep waits d by the scheduler's clock, or until ctx ends (its error).
func (s *Scheduler) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := s.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.Chan():
		return nil
	}
}

// spreadDelay is this replica's wait before trying the job's lock at tick
// (a zero tick: a rerun, which waits only for being busy).
func (s *Scheduler) spreadDelay(e *entry, tick time.Time) time.Duration {
	d, _ := s.turn(e, tick)
	return d
}

// turn is spreadDelay with this replica's rank for the job at tick (0
// when it is alone, or the tick is zero).
func (s *Scheduler) turn(e *entry, tick time.Time) (time.Duration, int) {
	live := s.liveFor(e)
	if len(live) < 2 {
		return 0, 0
	}
	if tick.IsZero() {
		return turnDelay(0, false, s.busy(tick)), 0
	}
	late := s.now().Sub(s.wakeFor(e, tick)) > maxLateToSpread
	rank := s.rank(e.job.Name, live, tick)
	return spreadWait(rank, late, s.busy(tick), s.untilStart(e, tick)), rank
}

// Waiting for a turn in the timer queue. A replica the job is not dealt to
// (rank 1 and beyond) waits for its turn at the tick in the timer queue,
// not on a worker, and then, in the common case, finds that the watch has
// delivered the dealt replica's claim and skips the tick in the
// dispatcher: the tick costs it no goroutine, context, timer or log
// context, only the claim's delivery, where it used to wait on a
// goroutine of its own to be woken early by the claim; two thirds of a
// replica's ticks are dealt elsewhere at three replicas. With the reused
// workers (workers.go) and fewer copies per write, the replicas' CPU per
// job-tick fell by 14 % at 100 job-ticks/s and 20 % at 1,000/s
// (BENCHMARKS.md). What runs does not change: the turn is the same wait,
// and a tick not claimed by then is tried as before.

// queueTurn puts e, woken for its tick, back in the timer queue until its
// turn at the tick when another replica ranks above it for the job, and
// reports whether it did; its tick is then work in hand (offer). The
// dealt replica, and a lone one, is not queued again: it tries at once,
// or waits only for its busy steps, on a worker.
func (s *Scheduler) queueTurn(e *entry) bool {
	tick := e.slot.tick
	if s.claims.covers(e.job.Name, tick) {
		return false // claimed already (in a lead): skipClaimed
	}
	d, rank := s.turn(e, tick)
	if rank == 0 || d <= 0 {
		return false
	}
	at := s.now().Add(d)
	q := s.timers
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case e.slot.pending != 0:
		return false // work offered meanwhile: taken after the tick, as on a worker
	case e.slot.stopped || q.closed:
		e.slot.busy = false
		return true
	}
	e.slot.at, e.slot.kind = at.UnixNano(), wakeTurn
	e.slot.busy = false
	q.push(e)
	return true
}

// turnTaken reports whether e waited in the timer queue for its turn at
// tick (queueTurn): e is busy with tick, woken for its turn. Only the
// worker working e calls it.
func (s *Scheduler) turnTaken(e *entry, tick time.Time) bool {
	return e.slot.kind == wakeTurn && !tick.IsZero() && e.slot.tick.Equal(tick)
}

// skipClaimed skips e's tick in the dispatcher, without a worker, when the
// watch has delivered another replica's claim of it (or of a later tick)
// and runTick would skip it as already run; it reports whether it did.
func (s *Scheduler) skipClaimed(e *entry, tick time.Time) bool {
	if !s.claims.covers(e.job.Name, tick) || s.deferring() || !s.matchesHere(e) || !s.followsHere(e) {
		return false
	}
	log := s.log
	if log.GetLevel() <= zerolog.DebugLevel {
		log = log.With().Str("job", e.job.Name).Time("tick", tick).Logger()
	}
	s.skip(e.job.Name, skipAlreadyRun, nil, log)
	return true
}

// spreadWait is the wait before trying a job's lock of a replica ranked
// rank for it, late reaching the tick or not, with busy runs of earlier
// ticks in progress and untilStart to go until the tick's planned start.
//
// Only the replica the job is dealt to (rank 0) claims ahead (ahead.go),
// and only it tries at once when late. The others take their turns from
// the tick, late or not:
//   - counted from their own wakes, which follow their own leads, a replica
//     with a longer lead took its turn before the dealt replica had even
//     woken;
//   - trying at once when late, a saturated replica raced the dealt
//     replica's claims in their lead: at 4,000 job-ticks/s on 3 replicas
//     and 2 cores, 1.4 reads per job-tick of records about to be claimed,
//     and 16 % more CPU per job-tick (BENCHMARKS.md).
func spreadWait(rank int, late bool, busy int, untilStart time.Duration) time.Duration {
	if rank == 0 {
		return turnDelay(0, late, busy)
	}
	return untilStart + turnDelay(rank, false, busy)
}

// turnDelay is the wait before trying a job's lock of a replica ranked
// rank for it, late reaching the tick or not, with busy runs of earlier
// ticks in progress.
//
// Every replica takes its turn, however far down it ranks: a standby rule
// (ranks 3 and beyond trying only a second after the tick) kept 20
// replicas on 2 cores from collapsing at 500 job-ticks/s, but a standby
// cannot take over an every-second job's tick before the next one is
// claimed, and a 30-minute chaos soak with it caught up after NATS faults
// in p99 5-6 s instead of under 1 s.
func turnDelay(rank int, late bool, busy int) time.Duration {
	if late {
		// This replica reaches the tick late: it is saturated, and so, most
		// likely, are the others. Waiting would only add to the delay.
		return 0
	}
	return time.Duration(min(busy, maxBusySteps))*busyStep + time.Duration(rank)*spreadStep
}

// rank is self's place among the live replicas for the job at tick: 0 for
// the replica the job is assigned to, then 1, 2... The due jobs, ordered
// by a hash of their names, are dealt to the replicas, ordered likewise, in
// turn. The orders do not depend on the tick, so while the jobs due and the
// live replicas stay the same a job is dealt to the same replica at every
// tick: that replica wrote the job's record last and claims the next tick
// from its cached state, without reading the record (a tick-dependent order
// moved every job to another replica at every tick, which then read the
// record first: a request and a reply of the whole state per job-tick).
// The deal is made once per tick and live set (dealFor) and reused by every
// job of the tick: ordering per job made a tick cost O(jobs² log jobs).
// The jobs' order is made once per tick whatever the live set: jobs with
// on_replicas are dealt to the live replicas that match them (liveFor),
// so one tick may see several live sets.
func (s *Scheduler) rank(name string, live []string, tick time.Time) int {
	pos, reps := s.deals.dealFor(tick, live, s.dueAt)
	i, ok := pos[name]
	me := slices.Index(reps, s.registry.ID())
	if !ok || me < 0 {
		return 0
	}
	n := len(reps)
	return ((me-i)%n + n) % n
}

// deals caches the deal of the last few ticks.
type deals struct {
	mu   sync.Mutex
	last []*deal
}

type deal struct {
	tick time.Time
	pos  map[string]int // job name -> place in the hash order
	// reps are the live replicas in hash order, by live set (joined).
	reps map[string][]string
}

const dealsKept = 4

// dealFor returns the deal of tick: the due jobs' places in their hash
// order, and the replicas of live in theirs.
func (c *deals) dealFor(tick time.Time, live []string, due func(time.Time) []string) (map[string]int, []string) {
	key := strings.Join(live, "\x00")
	c.mu.Lock()
	defer c.mu.Unlock()
	var d *deal
	for _, x := range c.last {
		if x.tick.Equal(tick) {
			d = x
		}
	}
	if d == nil {
		jobs := hashOrder(due(tick))
		d = &deal{tick: tick, pos: make(map[string]int, len(jobs)), reps: map[string][]string{}}
		for i, j := range jobs {
			d.pos[j] = i
		}
		c.last = append(c.last, d)
		if len(c.last) > dealsKept {
			c.last = c.last[1:]
		}
	}
	reps, ok := d.reps[key]
	if !ok {
		reps = hashOrder(live)
		d.reps[key] = reps
	}
	return d.pos, reps
}

// hashOrder sorts xs by a hash of each (hashing once each).
func hashOrder(xs []string) []string {
	type hashed struct {
		s string
		h uint64
	}
	hs := make([]hashed, len(xs))
	for i, x := range xs {
		hs[i] = hashed{x, nameHash(x)}
	}
	slices.SortFunc(hs, func(a, b hashed) int {
		switch {
		case a.h < b.h:
			return -1
		case a.h > b.h:
			return 1
		}
		return cmpString(a.s, b.s)
	})
	out := make([]string, len(hs))
	for i, x := range hs {
		out[i] = x.s
	}
	return out
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func nameHash(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// dueAt returns the names of the registered jobs that have a tick at tick,
// by their schedules. Not by where their loops are: a loop that has already
// skipped the tick (another replica claimed it) moves on to its next one,
// so the set would shrink while the tick is dealt, differently on each
// replica, and the replicas would rank the jobs differently. The set is
// the one noted as each job's next tick was computed (dueTicks.note), so a
// tick costs nothing per job not due at it: scanning every job's schedule
// at every due tick was 8 % of a core on an idle replica of 100,000 daily
// jobs. Cached per tick, as every due job's loop asks.
func (s *Scheduler) dueAt(tick time.Time) []string {
	return s.due.at(tick)
}

// dueKept is how long before the latest tick asked the due sets of older
// ticks are kept: long past any spread delay.
const dueKept = time.Minute

// dueTicks holds, for each tick that some job's next tick was computed to
// be, the names of those jobs: a job is noted at each of its ticks in turn
// (nextTick, as its loop queues it), before the tick comes. A job removed keeps its
// place until the tick passes; a job added again is noted again, and at
// reads it once.
//
// Ticks are keyed by their Unix nanoseconds: the ticks of jobs in
// different zones are one instant in different locations. A tick of one
// job (every tick, when 100,000 daily jobs are spread over the day) is a
// name in one, about 35 bytes; a tick of several is a slice in more.
type dueTicks struct {
	mu     sync.Mutex
	one    map[int64]string
	more   map[int64][]string
	pruned time.Time // the tick asked when old ticks were last forgotten
}

// note records that the job name has a tick at tick.
func (d *dueTicks) note(tick time.Time, name string) {
	if tick.IsZero() {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.one == nil {
		d.one, d.more = map[int64]string{}, map[int64][]string{}
	}
	k := tick.UnixNano()
	if names, ok := d.more[k]; ok {
		if names[len(names)-1] != name {
			d.more[k] = append(names, name)
		}
	} else if first, ok := d.one[k]; ok {
		if first == name {
			return // the same tick again (after a rerun, or an outage retry)
		}
		delete(d.one, k)
		d.more[k] = []string{first, name}
	} else {
		d.one[k] = name
	}
}

// at returns the jobs noted at tick, sorted, each once, and forgets the
// ticks older than dueKept before it. It is called about once per tick
// (deals caches the deal made of it).
func (d *dueTicks) at(tick time.Time) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if tick.Sub(d.pruned) > dueKept {
		// Not at every call: a day of daily jobs spread over it is up
		// to 86,400 ticks held.
		old := tick.Add(-dueKept).UnixNano()
		for t := range d.one {
			if t < old {
				delete(d.one, t)
			}
		}
		for t := range d.more {
			if t < old {
				delete(d.more, t)
			}
		}
		d.pruned = tick
	}
	k := tick.UnixNano()
	if name, ok := d.one[k]; ok {
		return []string{name}
	}
	names := d.more[k]
	if names == nil {
		return nil
	}
	slices.Sort(names)
	names = slices.Compact(names)
	d.more[k] = names
	return slices.Clone(names) // the caller orders it its own way
}

// busy is the number of runs in progress on this replica that began for a
// tick before tick (a zero tick: all of them). Runs this replica took at
// tick itself do not count: its loops reach the tick some milliseconds
// apart, and the later ones would otherwise yield the replica's own
// assigned jobs to the next rank as soon as the earlier ones started.
func (s *Scheduler) busy(tick time.Time) int {
	s.inflight.mu.Lock()
	defer s.inflight.mu.Unlock()
	if tick.IsZero() {
		return s.inflight.total
	}
	return s.inflight.total - s.inflight.byTick[tick]
}

// inflight counts the runs in progress on this replica, in total and by
// tick, so that busy costs O(1) at every job of every tick.
type inflight struct {
	mu     sync.Mutex
	total  int
	byTick map[time.Time]int
}

// add counts a run of tick in (n = 1) or out (n = -1).
func (f *inflight) add(tick time.Time, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.byTick == nil {
		f.byTick = map[time.Time]int{}
	}
	f.total += n
	if f.byTick[tick] += n; f.byTick[tick] == 0 {
		delete(f.byTick, tick)
	}
}

// slots bounds the runs of ticks in progress on a replica; the zero value
// (nil channel) is unbounded.
type slots struct{ ch chan struct{} }

func newSlots(n int) slots {
	if n <= 0 {
		return slots{}
	}
	return slots{ch: make(chan struct{}, n)}
}

// acquire takes a slot, waiting until one is free or ctx ends.
func (sl slots) acquire(ctx context.Context) error {
	if sl.ch == nil {
		return nil
	}
	select {
	case sl.ch <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (sl slots) release() {
	if sl.ch != nil {
		<-sl.ch
	}
}
