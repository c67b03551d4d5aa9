package scheduler

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/lock"
)

// StoredFormat is the format of the jobs' records that this release reads
// and writes, announced by every replica (Replica.Format):
//   - 0 (announced none): a job's lock is a key of the lock bucket with a
//     TTL, taken before its tick is claimed in the state record;
//   - 2: the state record is the lock (hold.go); the lock bucket is not
//     written for jobs.
//
// The formats cannot share a job: a replica of format 0 does not see a
// hold, and one of format 2 does not take the lock bucket's key. So during
// a rolling update the newer replicas start nothing (no tick, rerun,
// sweep or manual run) while a live replica announces an older format, and
// say so; the older ones run every job meanwhile. Both claim ticks with
// the same compare-and-swap on the same record, so no tick runs twice
// even while they overlap. An older replica that starts while newer ones
// run jobs does not see their holds; so a newer replica that finds one
// (at its next tick or sweep, within a second) also takes the lock
// bucket's key of each job it is running, which the older replica
// respects, until that run ends. Once the last older replica is gone (its
// announcement removed at a clean stop, or TTL old), the newer ones start,
// and for one lease after that they also wait while the job's key in the
// lock bucket is held: an older replica that died mid-run holds it until
// its lease ends.
const StoredFormat = 2

// skipOlderReplica is the skip reason while a replica of an older stored
// format runs the jobs.
const skipOlderReplica = "older_replica"

// ErrOlderReplica is Trigger's error while a replica of an older release
// (stored format) is live: that release runs the jobs until it is gone.
var ErrOlderReplica = errors.New("a replica of an older release is running; this one starts no run until the rolling update is done")

// olderGate tracks the older replicas this one defers to.
type olderGate struct {
	mu sync.Mutex
	// ids are the older replicas seen at the last look; gone is when the
	// last of them was found gone (zero while there are some, or never
	// were).
	ids  []string
	gone time.Time
}

// deferring reports whether a live replica announces an older stored
// format, logging when that starts and ends.
func (s *Scheduler) deferring() bool {
	ids := s.registry.Older()
	g := &s.older
	g.mu.Lock()
	defer g.mu.Unlock()
	was := len(g.ids) > 0
	switch {
	case slices.Equal(ids, g.ids):
	case len(ids) > 0:
		s.log.Warn().Strs("older_replicas", ids).Int("format", StoredFormat).
			Msg("replicas of an older release are running: this replica starts no run until they are gone; finish the rolling update")
		g.gone = time.Time{}
	default:
		s.log.Info().Msg("no replica of an older release is left: this replica runs its jobs")
		g.gone = time.Now()
	}
	if len(ids) > 0 && !was {
		go s.guardHolds()
	}
	g.ids = ids
	return len(ids) > 0
}

// guardHolds takes the lock bucket's key of every job this replica holds
// now, for an older replica that does not see holds (see StoredFormat):
// each until its run ends.
func (s *Scheduler) guardHolds() {
	for _, l := range s.inHand.all() {
		ctx, cancel := context.WithTimeout(l.ctx, s.opts.AcquireTimeout)
		lease, err := s.legacy.Acquire(ctx, l.name)
		cancel()
		if err != nil {
			s.log.Warn().Err(err).Str("job", l.name).Msg("cannot take the job's key in the lock bucket for an older replica: it may start the job while this run goes on")
			continue
		}
		if !l.guardWith(lease) {
			lease.Close() // the run has ended meanwhile
		}
	}
}

// heldLocks are the holds this replica has now.
type heldLocks struct {
	mu sync.Mutex
	m  map[*heldLock]struct{}
}

func (h *heldLocks) add(l *heldLock) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = map[*heldLock]struct{}{}
	}
	h.m[l] = struct{}{}
}

func (h *heldLocks) remove(l *heldLock) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.m, l)
}

func (h *heldLocks) all() []*heldLock {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*heldLock, 0, len(h.m))
	for l := range h.m {
		out = append(out, l)
	}
	return out
}

// legacyHeld reports whether, within a lease of the last older replica
// leaving, the job's key in the lock bucket is held (by an older replica
// that died mid-run: its child may still run until its lease ends).
func (s *Scheduler) legacyHeld(ctx context.Context, name string) (lock.Holder, bool) {
	s.older.mu.Lock()
	gone := s.older.gone
	s.older.mu.Unlock()
	if gone.IsZero() || time.Since(gone) > s.holds.lease || s.legacy == nil {
		return lock.Holder{}, false
	}
	rctx, cancel := context.WithTimeout(ctx, s.holds.retryMax)
	defer cancel()
	h, err := s.legacy.Holder(rctx, name)
	return h, err == nil
}

// skipDeferred counts and logs a tick left to an older replica.
func (s *Scheduler) skipDeferred(name string, log zerolog.Logger) {
	s.m.skipped.WithLabelValues(name, skipOlderReplica).Inc()
	log.Debug().Msg("tick skipped: a replica of an older release runs the jobs until the rolling update is done")
}

// awaitReplicas waits, once Run has started, until this replica has heard
// its own first announcement (so it knows the others), then fails with
// ErrOlderReplica while it defers to an older release.
func (s *Scheduler) awaitReplicas(ctx context.Context) error {
	s.mu.Lock()
	running := s.ctx != nil
	s.mu.Unlock()
	if running {
		select {
		case <-s.registry.Sampled():
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if s.deferring() {
		return ErrOlderReplica
	}
	return nil
}
