package scheduler

import (
	"context"
	"encoding/binary"
	"hash/fnv"
	"slices"
	"sync"
	"time"
)

// Spreading load over replicas. At a tick, every replica's loop for every
// due job fires at once; without help the fastest replica wins most locks.
// Instead each replica computes the same assignment of the jobs due at the
// tick to the live replicas (registry), balanced by count: the assigned
// replica tries at once, the others one spreadStep later per rank, so they
// take over only when it does not claim the tick. A replica also waits a
// spreadStep per run of an earlier tick it still has in progress (up to
// maxBusySteps), so a busy replica yields to an idle one. An idle fleet, or a lone replica,
// keeps its tick-to-start delay: the assigned replica never waits.
const (
	spreadStep   = 20 * time.Millisecond
	maxBusySteps = 10
)

// waitTurn waits for this replica's turn at the job's tick, then for a run
// slot (Options.MaxConcurrentRuns). It returns ctx's error if ctx ends
// first; then no slot is held.
func (s *Scheduler) waitTurn(ctx context.Context, name string, tick time.Time) error {
	if d := s.spreadDelay(name, tick); d > 0 {
		t := s.clock.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.Chan():
		}
	}
	return s.slots.acquire(ctx)
}

// spreadDelay is this replica's wait before trying the job's lock at tick
// (a zero tick: a rerun, which waits only for being busy).
func (s *Scheduler) spreadDelay(name string, tick time.Time) time.Duration {
	live := s.registry.live()
	if len(live) < 2 {
		return 0
	}
	busy := min(s.busy(tick), maxBusySteps)
	d := time.Duration(busy) * spreadStep
	if tick.IsZero() {
		return d
	}
	return d + time.Duration(rank(s.dueAt(tick), name, live, s.registry.id(), tick))*spreadStep
}

// rank is self's place among the live replicas for the job at tick: 0 for
// the replica the job is assigned to, then 1, 2... The due jobs, ordered
// by a hash with the tick, are dealt to the replicas, ordered likewise, in
// turn.
func rank(due []string, name string, live []string, self string, tick time.Time) int {
	byHash := func(xs []string) []string {
		out := slices.Clone(xs)
		slices.SortFunc(out, func(a, b string) int {
			ha, hb := mix(a, tick), mix(b, tick)
			switch {
			case ha < hb:
				return -1
			case ha > hb:
				return 1
			}
			return cmpString(a, b)
		})
		return out
	}
	jobs, reps := byHash(due), byHash(live)
	i, me := slices.Index(jobs, name), slices.Index(reps, self)
	if i < 0 || me < 0 {
		return 0
	}
	n := len(reps)
	return ((me-i)%n + n) % n
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

func mix(s string, tick time.Time) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(tick.UnixNano()))
	h.Write(b[:])
	return h.Sum64()
}

// dueAt returns the names of the registered jobs that have a tick at tick,
// by their schedules. Not by where their loops are: a loop that has already
// skipped the tick (another replica claimed it) moves on to its next one,
// so the set would shrink while the tick is dealt, differently on each
// replica, and the replicas would rank the jobs differently. Cached per
// tick, as every due job's loop asks.
func (s *Scheduler) dueAt(tick time.Time) []string {
	s.due.mu.Lock()
	defer s.due.mu.Unlock()
	if names, ok := s.due.byTick[tick]; ok {
		return names
	}
	s.mu.Lock()
	var out []string
	for _, e := range s.jobs {
		if e.sched.Next(tick.Add(-time.Nanosecond)).Equal(tick) {
			out = append(out, e.job.Name)
		}
	}
	s.mu.Unlock()
	if s.due.byTick == nil {
		s.due.byTick = map[time.Time][]string{}
	}
	for t := range s.due.byTick {
		if t.Before(tick.Add(-dueKept)) {
			delete(s.due.byTick, t)
		}
	}
	s.due.byTick[tick] = out
	return out
}

// dueKept is how long before the latest tick asked the due sets of older
// ticks are kept: long past any spread delay.
const dueKept = time.Minute

// dueTicks caches dueAt.
type dueTicks struct {
	mu     sync.Mutex
	byTick map[time.Time][]string
}

// busy is the number of runs in progress on this replica that began for a
// tick before tick (a zero tick: all of them). Runs this replica took at
// tick itself do not count: its loops reach the tick some milliseconds
// apart, and the later ones would otherwise yield the replica's own
// assigned jobs to the next rank as soon as the earlier ones started.
func (s *Scheduler) busy(tick time.Time) int {
	s.mu.Lock()
	entries := make([]*entry, 0, len(s.jobs))
	for _, e := range s.jobs {
		entries = append(entries, e)
	}
	s.mu.Unlock()
	n := 0
	for _, e := range entries {
		e.mu.Lock()
		if e.running > 0 && (tick.IsZero() || e.runTick.Before(tick)) {
			n++
		}
		e.mu.Unlock()
	}
	return n
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
