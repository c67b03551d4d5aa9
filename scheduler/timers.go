package scheduler

import (
	"container/heap"
	"sync"
	"time"
)

// timerQueue holds the idle jobs ordered by when each must next be woken
// (its next tick plus jitter, or its outage retry): a min-heap, so that one
// timer, for the earliest, serves every job, and adding, removing or
// rescheduling a job costs O(log jobs). An idle job costs no goroutine; a
// job is taken out of the queue while it is busy (a catch-up, a tick, a
// rerun, an outage retry, each on a goroutine of its own) and put back when
// that work is done.
type timerQueue struct {
	mu     sync.Mutex
	items  entryHeap
	closed bool // the scheduler is shutting down: nothing starts any more
	// wake tells the dispatcher that the earliest wake-up changed.
	wake chan struct{}
}

func newTimerQueue() *timerQueue {
	return &timerQueue{wake: make(chan struct{}, 1)}
}

// wakeKind is why a queued job is woken.
type wakeKind uint8

const (
	wakeTick    wakeKind = iota // its next tick (plus jitter) has come
	wakeRecover                 // retry the catch-up after an outage
	// wakeTurn: its turn at the tick has come, after the replicas ranked
	// above it for the job (spread.go, queueTurn).
	wakeTurn
)

// slot is an entry's place in the timer queue; guarded by timerQueue.mu.
type slot struct {
	index int // in the heap; -1 when not queued
	// at is when to wake it, by the scheduler's clock, in Unix
	// nanoseconds: a time.Time is 16 bytes more on each of 100,000 jobs,
	// and only the order and the wait are needed.
	at      int64
	tick    time.Time // the tick it waits for
	kind    wakeKind
	busy    bool // a goroutine is working on it
	stopped bool // removed, or the scheduler is shutting down
	// started: startLoop has run for it. Add while Run starts (a runtime
	// job's follow) and Run's own start of every job could both start one
	// entry, which then had two goroutines working it.
	started bool
	// pending is the work offered while the job was busy (or not yet
	// started): a rerun, a queued tick; taken when the work in hand is
	// done.
	pending offerKind
	// last is the last tick tried, so that none is tried twice; only the
	// goroutine working on the busy entry reads or writes it.
	last time.Time
	// placed: the tick's work holds a place among the claims in flight,
	// taken when the dispatcher started it (claimgate.go); its claim uses
	// it, or the work gives it back when it ends. Same ownership as last.
	placed bool
	// ranUntil is when the job's last run on this goroutine ended (its
	// recorded End), zero after the next tick is chosen; same ownership as
	// last. See nextTick.
	ranUntil time.Time
}

// push queues e to wake at its slot's at; call with mu held.
func (q *timerQueue) push(e *entry) {
	heap.Push(&q.items, e)
	if e.slot.index == 0 {
		q.poke()
	}
}

// remove takes e out of the queue if it is there; call with mu held.
func (q *timerQueue) remove(e *entry) {
	if e.slot.index < 0 {
		return
	}
	top := e.slot.index == 0
	heap.Remove(&q.items, e.slot.index)
	if top {
		q.poke()
	}
}

// poke wakes the dispatcher, without blocking.
func (q *timerQueue) poke() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// popDue takes out the entries due at now, marking them busy, and returns
// them with the time until the next wake-up (ok false: the queue is empty).
func (q *timerQueue) popDue(now time.Time) (due []*entry, wait time.Duration, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) > 0 && q.items[0].slot.at <= now.UnixNano() {
		e := heap.Pop(&q.items).(*entry)
		e.slot.busy = true
		due = append(due, e)
	}
	if len(q.items) == 0 {
		return due, 0, false
	}
	return due, time.Duration(q.items[0].slot.at - now.UnixNano()), true
}

// entryHeap implements heap.Interface over entries by slot.at.
type entryHeap []*entry

func (h entryHeap) Len() int           { return len(h) }
func (h entryHeap) Less(i, j int) bool { return h[i].slot.at < h[j].slot.at }
func (h entryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].slot.index = i
	h[j].slot.index = j
}

func (h *entryHeap) Push(x any) {
	e := x.(*entry)
	e.slot.index = len(*h)
	*h = append(*h, e)
}

func (h *entryHeap) Pop() any {
	old := *h
	n := len(old)
	e := old[n-1]
	old[n-1] = nil
	e.slot.index = -1
	*h = old[:n-1]
	return e
}
