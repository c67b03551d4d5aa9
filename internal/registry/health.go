package registry

import (
	"sync"
	"time"
)

// Right after an outage every announcement may have lapsed although the
// replicas are up. So a replica judges others gone only once its own
// announcements have gone through without a failure for TTL: by then
// every live replica has announced itself again. Until then its view of
// the others is not to be trusted: a replica missing from it may be up.

// Health tells whether this replica's view of the others can be trusted:
// it has announced itself, and no announcement failed within the last
// TTL. The zero value has seen no announcement.
type Health struct {
	mu       sync.Mutex
	ok       bool
	lastFail time.Time
}

// Note records the outcome of an announcement at now (real time).
func (h *Health) Note(err error, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		h.lastFail = now
		return
	}
	h.ok = true
}

// Settled reports whether the view of the others can be trusted at now.
func (h *Health) Settled(now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ok && (h.lastFail.IsZero() || now.Sub(h.lastFail) >= TTL)
}
