package scheduler

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cronlock/cronlock/internal/follow"
	"github.com/cronlock/cronlock/internal/history"
	"github.com/cronlock/cronlock/internal/kv"
)

// claims follows the shared state of every job from the headers of the
// history bucket's writes: the last claimed tick, a suspension, a pending
// rerun and the times of the last success and failure. A replica then
// skips a tick another replica has claimed without touching the lock, stops
// waiting for the lock as soon as the tick it waits for is claimed, stops
// starting a suspended job within a watch delivery, and hears of a rerun at
// once. It is an optimisation and a messenger: the claim's compare-and-swap
// under the lock still decides.
type claims struct {
	mu    sync.Mutex
	views map[string]view
	waits map[string][]claimWait
	// changes are closed at the next delivery of the job's state.
	changes map[string]chan struct{}
	// listeners are called at each delivery of the job's state (the holds
	// of this replica: followrecord.go).
	listeners map[string][]recordListener
	// fs carry the watch: one follower of every key, or, beyond
	// followersPerJob live replicas, followers of the keys this replica
	// follows (only: by job name; nil for every key). See followset.go.
	fs   []*follow.Follower
	only map[string]struct{}
	// deliver is the watch's handler, for the followers of a new set.
	deliver kv.Handler
	// changed is called (outside the lock) with each job's new view.
	changed func(name string, v view)
	// trusted filters the last claimed tick of each write: the zero time
	// for one that no replica can have claimed (see anomaly.go).
	trusted func(time.Time) time.Time
}

// view is what the watch tells of a job's state.
type view struct {
	lastTick    time.Time
	suspended   bool
	rerun       time.Time // zero: none pending
	lastSuccess time.Time
	lastFailure time.Time
	runningOn   []string // owners with a run "running" (history.RunningOnHeader)
	definition  string   // of the last claim (history.DefinitionHeader)
	// holder is the lease holding the job's lock ("" free), rev the
	// revision the watch delivered last and at when (local monotonic):
	// see hold.go.
	holder string
	rev    uint64
	at     time.Time
	// token is the highest fencing token the watch has told (history.TokenHeader).
	token uint64
	// cancel is the lease a cancel request is for ("" none).
	cancel string
	// queued is the tick waiting for the job's run to end (zero: none).
	queued time.Time
	// backfill: a backfill is in progress (history.BackfillHeader).
	backfill bool
}

type claimWait struct {
	tick time.Time
	fire func()
	id   *int
}

func newClaims() *claims {
	return &claims{views: map[string]view{}, waits: map[string][]claimWait{}, changes: map[string]chan struct{}{}}
}

// watch starts following the bucket's records of fs (nil: every record;
// see followset.go); stop with stop.
func (c *claims) watch(ctx context.Context, h *History, fs *followSet, changed func(string, view)) error {
	c.changed = changed
	c.deliver = func(key string, rev uint64, _ time.Time, hdr nats.Header) {
		if strings.Contains(key, "/") {
			return // an output, not a job's state
		}
		if !c.follows(jobOf(key)) {
			return // left the follow set; a follower being replaced delivered it
		}
		h.store.Seen(key, rev)
		v := parseView(hdr)
		v.rev, v.at = rev, time.Now()
		c.observe(key, v)
	}
	return c.refollow(ctx, h, fs)
}

// parseView reads the watch's view of a record from its headers. A header
// that is absent reads as zero, without the error its parse would
// allocate: most records have no rerun, queued tick or failure.
func parseView(hdr nats.Header) view {
	v := view{suspended: hdr.Get(history.SuspendedHeader) == "1", runningOn: hdr.Values(history.RunningOnHeader),
		definition: hdr.Get(history.DefinitionHeader), holder: hdr.Get(history.HolderHeader),
		cancel: hdr.Get(history.CancelHeader), backfill: hdr.Get(history.BackfillHeader) != ""}
	v.token, _ = strconv.ParseUint(hdr.Get(history.TokenHeader), 10, 64)
	v.lastTick = headerTime(hdr, history.LastTickHeader)
	v.rerun = headerTime(hdr, history.RerunHeader)
	v.queued = headerTime(hdr, history.QueuedHeader)
	v.lastSuccess = headerUnix(hdr, history.LastSuccessHeader)
	v.lastFailure = headerUnix(hdr, history.LastFailureHeader)
	return v
}

// headerTime is the RFC 3339 time in header key, zero if absent or bad.
func headerTime(hdr nats.Header, key string) time.Time {
	s := hdr.Get(key)
	if s == "" {
		return time.Time{}
	}
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

// headerUnix is the Unix seconds in header key, zero if absent or bad.
func headerUnix(hdr nats.Header, key string) time.Time {
	s := hdr.Get(key)
	if s == "" {
		return time.Time{}
	}
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.Unix(sec, 0)
}

// stop ends the watch.
func (c *claims) stop() {
	c.mu.Lock()
	fs := c.fs
	c.fs = nil
	c.mu.Unlock()
	for _, f := range fs {
		f.Stop()
	}
}

func (c *claims) observe(name string, v view) {
	if c.trusted != nil {
		v.lastTick = c.trusted(v.lastTick)
	}
	c.mu.Lock()
	old := c.views[name]
	if v.lastTick.Before(old.lastTick) {
		v.lastTick = old.lastTick // an older write delivered late
	}
	v.token = max(v.token, old.token)
	if v.rev <= old.rev {
		// An older write delivered late, or one a read saw first (holdOver):
		// the first sight of a revision starts its count.
		v.holder, v.rev, v.at = old.holder, old.rev, old.at
	}
	c.views[name] = v
	if ch, ok := c.changes[name]; ok {
		close(ch)
		delete(c.changes, name)
	}
	ws := c.waits[name][:0]
	for _, w := range c.waits[name] {
		if v.lastTick.Before(w.tick) {
			ws = append(ws, w)
		} else {
			w.fire()
		}
	}
	c.waits[name] = ws
	changed := c.changed
	var buf [2]recordListener
	ls := append(buf[:0], c.listeners[name]...)
	c.mu.Unlock()
	for _, l := range ls {
		l.delivered()
	}
	if changed != nil {
		changed(name, v)
	}
}

// absent reports whether the watch shows that the job's record key does
// not exist: the key is followed, the followers have delivered what was in
// the bucket when they started, and none of them delivered a write of it
// since (a delete included). A new job's first claim then writes without a
// read that would find nothing. It may be wrong by a write not yet
// delivered, which the write's compare-and-swap refuses.
func (c *claims) absent(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.fs) == 0 || c.views[key].rev != 0 || !c.followsLocked(jobOf(key)) {
		return false
	}
	for _, f := range c.fs {
		select {
		case <-f.CaughtUp():
		default:
			return false
		}
	}
	return true
}

// covers reports whether tick is known to be claimed already.
func (c *claims) covers(name string, tick time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !tick.After(c.views[name].lastTick)
}

// suspended reports whether the job is known to be suspended.
func (c *claims) suspended(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.views[name].suspended
}

// rerun returns the tick of the job's pending rerun, if any.
func (c *claims) rerun(name string) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.views[name].rerun
	return t, !t.IsZero()
}

// onClaim calls fire once when a tick at or after tick is claimed, unless
// the returned cancel is called first.
func (c *claims) onClaim(name string, tick time.Time, fire func()) (cancel func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !tick.After(c.views[name].lastTick) {
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

// onChange returns a channel closed at the next delivery of the job's
// state.
func (c *claims) onChange(name string) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch, ok := c.changes[name]
	if !ok {
		ch = make(chan struct{})
		c.changes[name] = ch
	}
	return ch
}

// holdOver reports whether the hold of lease id on the job's record at rev
// is over at now: this replica first saw that revision (delivered by the
// watch, or read) at least a lease ago (see hold.go). If not, it also
// returns how long to wait before asking again, unless the watch delivers
// first.
func (c *claims) holdOver(name, id string, rev uint64, lease time.Duration, now time.Time) (bool, time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := c.views[name]
	switch {
	case v.rev < rev:
		// Read before the watch delivered it (or with no watch at all):
		// this first sight starts the count.
		v.holder, v.rev, v.at = id, rev, now
		c.views[name] = v
		return false, lease
	case v.rev > rev:
		return false, 0 // the state read is stale: read again
	}
	// One revision is one write: its hold is the one read (a write without
	// the header, an operator's, is counted all the same).
	left := v.at.Add(lease).Sub(now)
	return left <= 0, left
}

// token returns the highest fencing token the watch has told of the job.
func (c *claims) token(name string) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.views[name].token
}
