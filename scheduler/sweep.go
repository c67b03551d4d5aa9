package scheduler

import (
	"context"
	"hash/fnv"
	"slices"
	"sync"
	"time"

	"github.com/cronlock/cronlock/internal/history"
)

// Abandoned runs, found without waiting for a claim. A replica killed in a
// run leaves the run "running" in the history; a claim of the job marks it
// abandoned (markAbandoned), but for a daily job the next claim is a day
// later, and so would be the failure's notification. So every replica
// keeps, from the headers of the history's writes (history.RunningOnHeader), which
// owners have a run of which job "running" (orphans), and a sweep every
// sweepEvery looks at the owners among them that are no longer live. For
// each of a gone owner's jobs registered here, the replica the job is dealt
// to marks the runs whose replica is gone abandoned by the claim's own rules
// (ownerGone: never while the owner's announcement lists the job, never
// right after this replica's own outage), in one compare-and-swap write of
// the job's record, unless a hold that is not over keeps the record (see
// hold.go: the dead replica's hold, until it has been seen unchanged for a
// lease; or a run's), then reports them (Options.OnResult). So the run is
// marked within about sweepEvery of the later of the hold's end and the
// owner's announcement lapsing (ReplicaTTL).
//
// The compare-and-swap on the job's state marks each run once: a later
// claim, or another sweeper, finds nothing left to mark, so the run is
// reported once. The other replicas take over one sweepFallback per rank
// later, if the run is still "running" then (the dealt replica died too,
// or does not have the job).
//
// The cost is flat in the number of jobs: the index holds only the jobs
// with a run in progress, a sweep visits owners, and only a gone owner's
// jobs cost NATS calls. Runs recorded by a release without the header are
// left to the next claim, as before.
const (
	sweepEvery    = time.Second
	sweepFallback = 3 * time.Second
	// maxSweeps bounds the jobs swept at once.
	maxSweeps = 16
)

// orphans indexes the jobs with a run "running", by owner, as the history
// watch tells.
type orphans struct {
	mu      sync.Mutex
	byOwner map[string]map[string]struct{} // owner → jobs
	byJob   map[string][]string            // job → owners
	since   map[string]time.Time           // owner → when this replica first found it gone
}

// orphan is a job with a run "running" on an owner.
type orphan struct{ job, owner string }

func newOrphans() *orphans {
	return &orphans{byOwner: map[string]map[string]struct{}{}, byJob: map[string][]string{},
		since: map[string]time.Time{}}
}

// note records the owners with a run of job "running" (none: forget it).
func (o *orphans) note(job string, owners []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, old := range o.byJob[job] {
		if slices.Contains(owners, old) {
			continue
		}
		delete(o.byOwner[old], job)
		if len(o.byOwner[old]) == 0 {
			delete(o.byOwner, old)
			delete(o.since, old)
		}
	}
	if len(owners) == 0 {
		delete(o.byJob, job)
		return
	}
	o.byJob[job] = slices.Clone(owners)
	for _, owner := range owners {
		if o.byOwner[owner] == nil {
			o.byOwner[owner] = map[string]struct{}{}
		}
		o.byOwner[owner][job] = struct{}{}
	}
}

// gone returns the jobs with a run "running" on an owner other than self
// that is not live, each with how long this replica has found that owner
// gone (0 the first time), and self's jobs for which idle holds (with 0).
// It visits the jobs of gone owners and of self only.
func (o *orphans) gone(now time.Time, self string, live []string, idle func(job string) bool) map[orphan]time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[orphan]time.Duration{}
	for owner, jobs := range o.byOwner {
		switch {
		case owner == self:
			for job := range jobs {
				if idle(job) {
					out[orphan{job, owner}] = 0
				}
			}
			continue
		case slices.Contains(live, owner):
			delete(o.since, owner)
			continue
		}
		first, ok := o.since[owner]
		if !ok {
			o.since[owner], first = now, now
		}
		for job := range jobs {
			out[orphan{job, owner}] = now.Sub(first)
		}
	}
	return out
}

// sweepLoop sweeps every sweepEvery until ctx is done.
func (s *Scheduler) sweepLoop(ctx context.Context) {
	t := time.NewTicker(sweepEvery) // real time, as the leases and announcements expire
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.sweep()
		}
	}
}

// sweep sweeps the jobs whose run this replica should now mark abandoned
// (see above), maxSweeps at a time. A sweep that outlasts sweepEvery delays
// the next (the ticker drops ticks).
func (s *Scheduler) sweep() {
	if !s.health.Settled(time.Now()) || s.deferring() {
		return // its view of the others cannot be trusted yet, or an older release sweeps
	}
	live := s.registry.Live()
	self := s.registry.ID()
	// A run of this replica's own id that it does not run now is an earlier
	// process's (same id), or one whose result it gave up writing: the lock
	// decides (see sweepJob).
	found := s.orphans.gone(time.Now(), self, live, func(job string) bool {
		e, ok := s.lookup(job)
		if !ok {
			return false
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.running == 0
	})
	var sweeps sync.WaitGroup
	slots := make(chan struct{}, maxSweeps)
	for k, d := range found {
		if !s.sweepsRecord(k.job) {
			continue // not a job of this replica's: its replicas sweep it
		}
		if k.owner != self && d < time.Duration(sweepRank(k.job, self, live))*sweepFallback {
			continue
		}
		if !s.beginRun() {
			break
		}
		slots <- struct{}{}
		sweeps.Go(func() {
			defer func() { <-slots }()
			s.sweepJob(k.job)
		})
	}
	sweeps.Wait()
}

// sweepRank is self's place for the job among the live replicas: 0 for the
// one that sweeps it at once. Every replica computes the same order.
func sweepRank(job, self string, live []string) int {
	order := slices.Clone(live)
	key := func(id string) uint64 {
		h := fnv.New64a()
		h.Write([]byte(id))
		h.Write([]byte{0})
		h.Write([]byte(job))
		return h.Sum64()
	}
	slices.SortFunc(order, func(a, b string) int {
		ka, kb := key(a), key(b)
		switch {
		case ka < kb:
			return -1
		case ka > kb:
			return 1
		}
		return cmpString(a, b)
	})
	if i := slices.Index(order, self); i >= 0 {
		return i
	}
	return len(order)
}

// sweepJob marks the runs of the job whose replica is gone abandoned, in
// one write of its record, unless a live hold keeps the record (the dead
// replica's lease has not ended, or a run holds the lock: its claim marks
// the runs; either way the next sweep sees).
func (s *Scheduler) sweepJob(name string) {
	defer s.runs.Done()
	log := s.log.With().Str("job", name).Logger()
	ctx, cancel := context.WithTimeout(s.hard, s.stateTimeout())
	defer cancel()
	marked, err := s.history.abandon(ctx, name, s.ownerGone(ctx), s.holdLive)
	if err != nil {
		log.Warn().Err(err).Msg("cannot record runs abandoned by a replica that is gone")
		return
	}
	for _, r := range marked {
		log.Warn().Time("tick", r.Tick).Str("owner", r.Owner).Uint64("token", r.Token).Bool("manual", r.Manual).
			Msg("run abandoned: the replica running it stopped without recording a result")
		s.result(r)
	}
}

// holdLive reports whether the job's record at rev has a hold that is not
// over (see hold.go); a record it has not yet seen counts as held.
func (s *Scheduler) holdLive(name string, st *history.Record, rev uint64) bool {
	if st.Holder == nil {
		return false
	}
	over, _ := s.claims.holdOver(name, st.Holder.Lease, rev, s.holds.lease, time.Now())
	return !over
}

// abandon marks the job's runs left "running" whose replica is gone as
// abandoned and returns them, unless live says a hold keeps the record; a
// hold that is over goes with them.
func (h *History) abandon(ctx context.Context, name string, gone func(Run) bool, live func(string, *history.Record, uint64) bool) ([]Run, error) {
	var marked []Run
	_, _, err := h.updateAt(ctx, name, nil, 0, func(st *history.Record, rev uint64) bool {
		if live(name, st, rev) {
			marked = nil
			return false
		}
		marked = markAbandoned(st, gone)
		if len(marked) > 0 {
			st.Holder = nil
		}
		return len(marked) > 0
	})
	if err != nil {
		return nil, err
	}
	return marked, nil
}
