package scheduler

import (
	"context"
	"sync"
)

// Bounding the claims in flight. When many jobs fall due at once (10,000
// hourly jobs at minute 0, daily jobs at midnight), every due job used to
// send its claim at once: at 20,000 jobs due in the same second on 3
// replicas and 2 cores, the server's queue grew past AcquireTimeout, most
// claims timed out ("tick skipped: NATS failed"), the lower-ranked
// replicas' turns came while the dealt replica's claims still queued and
// raced them, registry heartbeats waited behind the claims until replicas
// were taken for gone, and 60–99 % of such a second's ticks were missed,
// with a goroutine per due job (42,000 and 1.4 GB per replica).
//
// A replica sends at most maxClaimsInFlight claims at a time. A due tick
// beyond them waits in the gate's queue, in order of arrival, without a
// goroutine (offer); when a place frees, the tick is skipped at once if the
// watch has delivered another replica's claim of it meanwhile, else its
// work starts holding the place. Claims made on a worker (a catch-up, a
// rerun) wait for a place there (enter). Either way AcquireTimeout starts
// once the place is held. A burst then runs at the rate the server stores
// claims, late but once, and the replica's other requests (results,
// heartbeats) wait behind at most maxClaimsInFlight claims. Results are
// not bounded: each frees a lock, and there are never more of them than
// runs.
//
// The bound is far above what a steady rate keeps in flight: a claim is a
// round trip of 1–3 ms at light load, so 1,000 job-ticks/s on 3 replicas
// keep about 1 claim in flight per replica, and 4,000/s a few dozen.
const maxClaimsInFlight = 128

// compactAfter: once the entries handed out from the front of the queue's
// array number this many and are at least half of it, the waiting ones
// are moved back to its start, so that a backlog that never drains does
// not grow the array for ever.
const compactAfter = 1024

// claimGate hands out the places among a replica's claims in flight.
type claimGate struct {
	mu       sync.Mutex
	limit    int // 0: no bound
	inFlight int
	queue    []claimWaiter // waiting, first at head
	head     int
}

// claimWaiter is one wait for a place: enter's (granted is closed when
// the place is handed over) or offer's (start runs holding the place, and
// reports whether it used it).
type claimWaiter struct {
	granted chan struct{}
	start   startFunc
}

// startFunc is what offer runs holding a place; waited says whether it
// waited in the queue for it (false: a place was free at the offer). It
// reports whether it used the place.
type startFunc func(waited bool) bool

func newClaimGate(limit int) *claimGate { return &claimGate{limit: max(limit, 0)} }

// enter takes a place, waiting until one is free or ctx ends (then it
// holds none and returns ctx's error). The caller leaves once its claim's
// request is answered.
func (g *claimGate) enter(ctx context.Context) error {
	g.mu.Lock()
	if g.freeLocked() {
		g.inFlight++
		g.mu.Unlock()
		return nil
	}
	w := claimWaiter{granted: make(chan struct{})}
	g.queue = append(g.queue, w)
	g.mu.Unlock()
	select {
	case <-w.granted:
		return nil
	case <-ctx.Done():
	}
	g.mu.Lock()
	removed := g.removeLocked(w.granted)
	g.mu.Unlock()
	if !removed { // handed over as ctx ended
		g.leave()
	}
	return ctx.Err()
}

// offer runs start holding a place: now if one is free, else on the
// goroutine that frees one, after the waits queued before it. start must
// not block; it reports whether it used the place (false: it is passed
// on).
func (g *claimGate) offer(start startFunc) {
	g.mu.Lock()
	if !g.freeLocked() {
		g.queue = append(g.queue, claimWaiter{start: start})
		g.mu.Unlock()
		return
	}
	g.inFlight++
	g.mu.Unlock()
	if !start(false) {
		g.leave()
	}
}

// leave gives a place back: to the first wait queued, if any.
func (g *claimGate) leave() {
	for {
		g.mu.Lock()
		if g.head == len(g.queue) {
			g.inFlight--
			g.mu.Unlock()
			return
		}
		w := g.popLocked()
		g.mu.Unlock()
		if w.granted != nil {
			close(w.granted)
			return
		}
		if w.start(true) {
			return
		}
	}
}

// waiting is the number of claims waiting for a place.
func (g *claimGate) waiting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queue) - g.head
}

func (g *claimGate) freeLocked() bool {
	return g.limit == 0 || (g.inFlight < g.limit && g.head == len(g.queue))
}

func (g *claimGate) popLocked() claimWaiter {
	w := g.queue[g.head]
	g.queue[g.head] = claimWaiter{}
	g.head++
	switch {
	case g.head == len(g.queue): // empty: reuse the array from its start
		g.queue, g.head = g.queue[:0], 0
	case g.head >= compactAfter && 2*g.head >= len(g.queue): // a backlog that never drains
		g.queue, g.head = append(g.queue[:0], g.queue[g.head:]...), 0
	}
	return w
}

// removeLocked takes enter's wait out of the queue; false if it was
// handed a place already.
func (g *claimGate) removeLocked(granted chan struct{}) bool {
	for i := g.head; i < len(g.queue); i++ {
		if g.queue[i].granted == granted {
			g.queue = append(g.queue[:i], g.queue[i+1:]...)
			return true
		}
	}
	return false
}
