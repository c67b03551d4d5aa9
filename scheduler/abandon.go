package scheduler

import (
	"context"
	"slices"
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
// replicas are up. So an owner is judged gone only once this replica's own
// announcements have settled (registry.Health); until then it leaves such
// runs "running" for a later claim to decide.

// ownerGone returns the test a claim applies to a run left "running": true
// when its replica is known to be gone (see above). It reads the owner's
// announcement, which only such runs need.
func (s *Scheduler) ownerGone(ctx context.Context) func(Run) bool {
	return func(r Run) bool {
		if !s.health.Settled(time.Now()) {
			return false
		}
		if r.Owner == s.registry.ID() {
			// This replica: its runs of the job have ended (it holds the
			// lock to claim), but for its parallel runs in progress.
			return !s.ownRuns.has(r.Job, r.Token)
		}
		rep, live, err := s.registry.Lookup(ctx, r.Owner)
		if err != nil {
			return false // cannot tell: leave it to a later claim
		}
		return !live || !slices.Contains(rep.Running, jobOf(r.Job))
	}
}
