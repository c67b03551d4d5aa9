package lock

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cronlock/cronlock/internal/follow"
	"github.com/cronlock/cronlock/internal/kv"
)

// keyState is what a Locker last heard about a key. It is a hint that
// saves round trips; ownership is only ever decided by a compare-and-swap
// write on the server.
type keyState struct {
	rev  uint64 // last revision on the key's subject; 0 if it has none
	free bool   // the last entry is a delete or purge marker, or there is none
}

// tracker keeps the latest keyState per key, fed by the Locker's own writes
// and by a watch on the bucket, and wakes waiters when a key changes.
type tracker struct {
	mu     sync.Mutex
	states map[string]keyState
	waits  map[string]chan struct{}
}

func newTracker() *tracker {
	return &tracker{states: map[string]keyState{}, waits: map[string]chan struct{}{}}
}

func (t *tracker) get(key string) (keyState, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.states[key]
	return s, ok
}

// observe records a state seen at revision s.rev. Older news is ignored, so
// a late watch delivery cannot undo what a write's acknowledgement told us.
func (t *tracker) observe(key string, s keyState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := t.states[key]; ok && old.rev > s.rev {
		return
	}
	t.states[key] = s
	if ch, ok := t.waits[key]; ok {
		close(ch)
		delete(t.waits, key)
	}
}

// forget drops the hint for key after a write against revision rev showed
// it was wrong, unless newer news arrived meanwhile.
func (t *tracker) forget(key string, rev uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.states[key]; ok && s.rev <= rev {
		delete(t.states, key)
	}
}

// changed returns a channel closed at the next observation of key.
func (t *tracker) changed(key string) <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	ch, ok := t.waits[key]
	if !ok {
		ch = make(chan struct{})
		t.waits[key] = ch
	}
	return ch
}

// leaseHeader carries the lease id on every write of a lease (acquire,
// renewal), so a headers-only watch tells a holder's own writes from
// another's.
const leaseHeader = "Cronlock-Lease"

// Pace of the bucket watch: what was written is collected every
// watchInterval, and delivered as it is written while an Acquire waits for
// a held key and for watchLinger after. A watch sent every write at once
// made an uncontended acquire+release cycle 1.5-1.9× the two raw writes it
// needs: the server and the client handled two deliveries per cycle
// concurrently with the writes.
const (
	watchInterval = 100 * time.Millisecond
	watchLinger   = time.Second
	// watchIdleInterval is the pace of the watch while the Locker holds no
	// lease and nobody waits: then no loss is to be seen, and the tracker's
	// revisions are only hints (an acquire from a stale one fails its
	// compare-and-swap and reads the key). A Locker beside the scheduler,
	// used only now and then, pulled ten times a second for nothing: a
	// request and an empty reply each, per replica.
	watchIdleInterval = 5 * time.Second
)

// watch follows every key of the bucket (headers only) and feeds the
// tracker, so a waiter wakes as soon as a key is released or expires, and an
// acquire knows the revision to write against (within watchInterval of
// another Locker's write; its own writes it knows from their
// acknowledgements). A write on a key held by a lease of this Locker that is
// not the lease's own (a force-release, another owner, the server's expiry)
// ends that lease within watchInterval: the renewal is only the check of
// last resort. When the watch is down, for instance while reconnecting,
// acquire falls back to backoff polling.
func (l *Locker) watch(ctx context.Context) (*follow.Paced, error) {
	pace := follow.Pace{Interval: watchInterval, Linger: watchLinger, IdleInterval: watchIdleInterval, Idle: l.held.empty}
	return l.bucket.FollowPaced(ctx, pace, func(key string, rev uint64, _ time.Time, h nats.Header) {
		l.tracker.observe(key, keyState{rev: rev, free: kv.IsFree(h)})
		if s := l.held.get(key); s != nil && rev > s.token && h.Get(leaseHeader) != s.id {
			reason := "the key was overwritten by another owner"
			if kv.IsFree(h) {
				reason = "the key was released by someone else or expired on the server"
			}
			s.lose(reason)
		}
	})
}

// leases are the live leases of a Locker, by key.
type leases struct {
	mu sync.Mutex
	m  map[string]*Lease
}

func (ls *leases) add(s *Lease) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.m == nil {
		ls.m = map[string]*Lease{}
	}
	ls.m[s.key] = s
}

func (ls *leases) remove(s *Lease) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.m[s.key] == s {
		delete(ls.m, s.key)
	}
}

// empty reports whether no lease is live.
func (ls *leases) empty() bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return len(ls.m) == 0
}

func (ls *leases) get(key string) *Lease {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.m[key]
}
