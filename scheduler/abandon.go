package scheduler

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"
)

// A run that the history shows "running" while its job's lock is free
// (the claimer holds it) has ended without its result being recorded. It is
// abandoned only when its replica is gone: the replica no longer announces
// itself, or its announcement no longer lists the job as running. A replica
// that could not record a result keeps it, and lists the job as running,
// until the result is written or it gives up (ResultRetryFor): it is not
// gone, so the run stays "running" until it records the true status.
//
// Right after an outage every announcement may have lapsed although the
// replicas are up. So a replica judges others gone only once its own
// announcements have gone through without a failure for ReplicaTTL: by
// then every live replica has announced itself again. Until then it leaves
// such runs "running" for a later claim to decide.

// announceHealth tells whether this replica's view of the others can be
// trusted: it has announced itself, and no announcement failed within the
// last ReplicaTTL.
type announceHealth struct {
	mu       sync.Mutex
	ok       bool
	lastFail time.Time
}

// note records the outcome of an announcement at now (real time).
func (h *announceHealth) note(err error, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		h.lastFail = now
		return
	}
	h.ok = true
}

// settled reports whether the view of the others can be trusted at now.
func (h *announceHealth) settled(now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ok && (h.lastFail.IsZero() || now.Sub(h.lastFail) >= ReplicaTTL)
}

// ownerGone returns the test a claim applies to a run left "running": true
// when its replica is known to be gone (see above). It reads the owner's
// announcement, which only such runs need.
func (s *Scheduler) ownerGone(ctx context.Context) func(Run) bool {
	return func(r Run) bool {
		if !s.health.settled(time.Now()) {
			return false
		}
		if r.Owner == s.registry.id() {
			return true // this replica: its runs of the job have ended (it holds the lock to claim)
		}
		e, err := s.registry.bucket.Last(ctx, replicaKey(r.Owner))
		if err != nil {
			return false // cannot tell: leave it to a later claim
		}
		if e == nil || e.Free || !replicaLive(e.Stored, s.registry.clock.now()) {
			return true
		}
		var rep Replica
		if json.Unmarshal(e.Value, &rep) != nil {
			return true
		}
		return !slices.Contains(rep.Running, r.Job)
	}
}
