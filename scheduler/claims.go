package scheduler

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cronlock/cronlock/internal/follow"
)

// claims follows the last claimed tick of every job, from the headers of
// the history bucket's writes, so a replica skips a tick another replica has
// claimed without touching the lock, and stops waiting for the lock as soon
// as the tick it waits for is claimed. It is an optimisation: the claim's
// compare-and-swap under the lock still decides.
type claims struct {
	mu    sync.Mutex
	last  map[string]time.Time
	waits map[string][]claimWait
	f     *follow.Follower
}

type claimWait struct {
	tick time.Time
	fire func()
	id   *int
}

func newClaims() *claims {
	return &claims{last: map[string]time.Time{}, waits: map[string][]claimWait{}}
}

// watch starts following the bucket; stop with stop.
func (c *claims) watch(ctx context.Context, h *History) error {
	f, err := h.bucket.Follow(ctx, func(key string, _ uint64, _ time.Time, hdr nats.Header) {
		t, err := time.Parse(time.RFC3339Nano, hdr.Get(lastTickHeader))
		if err == nil {
			c.observe(key, t)
		}
	})
	if err != nil {
		return err
	}
	c.f = f
	return nil
}

// stop ends the watch.
func (c *claims) stop() {
	if c.f != nil {
		c.f.Stop()
	}
}

func (c *claims) observe(name string, tick time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !tick.After(c.last[name]) {
		return
	}
	c.last[name] = tick
	ws := c.waits[name][:0]
	for _, w := range c.waits[name] {
		if tick.Before(w.tick) {
			ws = append(ws, w)
		} else {
			w.fire()
		}
	}
	c.waits[name] = ws
}

// covers reports whether tick is known to be claimed already.
func (c *claims) covers(name string, tick time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !tick.After(c.last[name])
}

// onClaim calls fire once when a tick at or after tick is claimed, unless
// the returned cancel is called first.
func (c *claims) onClaim(name string, tick time.Time, fire func()) (cancel func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !tick.After(c.last[name]) {
		fire()
		return func() {}
	}
	id := new(int)
	c.waits[name] = append(c.waits[name], claimWait{tick: tick, fire: fire, id: id})
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		ws := c.waits[name]
		for i, w := range ws {
			if w.id == id {
				c.waits[name] = append(ws[:i], ws[i+1:]...)
				break
			}
		}
		if len(c.waits[name]) == 0 {
			delete(c.waits, name)
		}
	}
}
