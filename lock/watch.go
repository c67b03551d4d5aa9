package lock

import (
	"context"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cronlock/cronlock/internal/follow"
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

// isFreeMarker reports whether a KV message marks its key as free: a delete
// or purge by a client, or a marker the server placed when the key's TTL
// expired.
func isFreeMarker(h nats.Header) bool {
	if len(h) == 0 {
		return false
	}
	if op := h.Get("KV-Operation"); op == "DEL" || op == "PURGE" {
		return true
	}
	return h.Get(jetstream.MarkerReasonHeader) != ""
}

// watch follows every key of the bucket (headers only) and feeds the
// tracker, so a waiter wakes as soon as a key is released or expires, and an
// acquire knows the revision to write against. When the watch is down, for
// instance while reconnecting, acquire falls back to backoff polling.
func (l *Locker) watch(ctx context.Context) (*follow.Follower, error) {
	prefix := l.subjectPrefix
	return follow.Start(ctx, l.stream, l.nc, prefix+">", func(subject string, seq uint64, h nats.Header) {
		l.tracker.observe(strings.TrimPrefix(subject, prefix), keyState{rev: seq, free: isFreeMarker(h)})
	})
}
