package scheduler

import (
	"context"
	"hash/fnv"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/cronlock/cronlock/internal/follow"
	"github.com/cronlock/cronlock/job"
)

// Following a share of the jobs. Every write of a job's record (its claim,
// its result) is delivered to every replica that follows the record, so a
// fleet where each replica followed every record paid 2 messages per
// job-tick for each replica added. Beyond followersPerJob live replicas
// that may run a job, only the first followersPerJob of the job's ranking
// (rendezvous hashing of the job's name with each replica's id: a replica
// joining or leaving moves only its own share) follow its record and take
// its ticks; the others skip them at once, without a message. A job's
// followers change only with the live set, so a replica further down takes
// a job over when one above it is gone from the registry.
//
// Up to followersPerJob replicas, every replica follows every record in one
// consumer, as it always did: a rolling update of a 3-replica fleet, and
// the chaos suite, see no change.
//
// Who follows is an optimisation, never the guarantee: a claim is a
// compare-and-swap of the record, whoever writes it. A replica that is not
// a follower still runs a job's manual runs (Trigger), and reads the record
// where it must show the job's shared state (Status).
const (
	followersPerJob = 3
	// maxKeysPerFollow bounds the keys of one consumer's filter: the server
	// checks a new consumer's filters against each other, so its create
	// costs the square of their number (embedded server, 2 cores: 16–23 ms
	// for 250 keys, 25–45 ms for 500, 70–134 ms for 1,000, 274–300 ms for
	// 2,000, catch-up included: BenchmarkStartSubjects in internal/follow).
	maxKeysPerFollow = 500
	// maxFollowedKeys bounds the keys a replica follows by name, in
	// maxFollowedKeys/maxKeysPerFollow consumers: a share beyond it follows
	// every record instead, as up to followersPerJob replicas (the ticks
	// are still taken by the followers only). Every change of the live set
	// remakes the consumers, about 0.07 ms of server CPU per key, and each
	// consumer costs a few goroutines on both sides; 4,000 keys is a job
	// list of about 13,000 at 10 replicas.
	maxFollowedKeys = 8 * maxKeysPerFollow
	// followCheck is how often a replica compares the live replicas and its
	// jobs with those its follow set was made for.
	followCheck = time.Second
)

// followers returns the replicas of live that follow the job name: all of
// them up to followersPerJob, else the first followersPerJob by rendezvous
// hash, in live's order.
func followers(name string, live []string) []string {
	if len(live) <= followersPerJob {
		return live
	}
	type scored struct {
		id    string
		score uint64
	}
	top := make([]scored, 0, followersPerJob+1)
	for _, id := range live {
		x := scored{id, followScore(name, id)}
		i, _ := slices.BinarySearchFunc(top, x, func(a, b scored) int {
			switch {
			case a.score > b.score:
				return -1
			case a.score < b.score:
				return 1
			}
			return strings.Compare(a.id, b.id)
		})
		if i < followersPerJob {
			top = slices.Insert(top, i, x)
			if len(top) > followersPerJob {
				top = top[:followersPerJob]
			}
		}
	}
	out := make([]string, 0, followersPerJob)
	for _, id := range live {
		if slices.ContainsFunc(top, func(x scored) bool { return x.id == id }) {
			out = append(out, id)
		}
	}
	return out
}

// followScore is the rendezvous score of replica id for the job name:
// FNV-1a, whose high bits hardly depend on the last bytes, then
// MurmurHash3's finalizer, so that ids differing in their last character
// ("r1", "r2") get unrelated scores. Without it, of 100 jobs on 10
// replicas named so, three replicas followed 49 to 53 and the others 18
// to 27.
func followScore(name, id string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	h.Write([]byte{0})
	h.Write([]byte(id))
	x := h.Sum64()
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// followsHere reports whether this replica takes e's ticks: an
// every_replica job's always, any job's while this replica is among its
// followers, or while it is not live in its own view (a lapsed
// announcement): then it tries, as before following a share, and the
// claim's compare-and-swap decides.
func (s *Scheduler) followsHere(e *entry) bool {
	if e.job.RunOn == job.RunOnEveryReplica {
		return true
	}
	return s.followsAmong(e, s.registry.LiveMatching(e.job.OnReplicas))
}

// followsAmong is followsHere with the live replicas that may run e.
func (s *Scheduler) followsAmong(e *entry, live []string) bool {
	if len(live) <= followersPerJob {
		return true
	}
	me := s.registry.ID()
	if !slices.Contains(live, me) {
		return true
	}
	return slices.Contains(followers(e.job.Name, live), me)
}

// followSet is what a replica's record watch follows: nil for every
// record, else the keys (patterns) and the jobs they are for.
type followSet struct {
	keys []string
	jobs map[string]struct{}
}

// followInputs is what a follow set is made of, to tell cheaply whether
// it may have changed: the live replicas, the registered jobs (a count
// Add and Remove bump) and the runs begun on jobs not followed.
type followInputs struct {
	live string
	gen  uint64
}

func (s *Scheduler) followInputs() followInputs {
	return followInputs{live: strings.Join(s.registry.Live(), "\x00"), gen: s.followGen.Load()}
}

// wantedFollowSet is the follow set for the registered jobs and the live
// replicas: nil while no job has more than followersPerJob live replicas
// that may run it, or when the share is more than maxFollowedKeys keys. A
// job with a run in progress here stays in it (a cancel request comes
// through its record).
func (s *Scheduler) wantedFollowSet() *followSet {
	entries := s.entries()
	all := s.registry.Live()
	liveFor := func(e *entry) []string {
		if len(e.job.OnReplicas) == 0 {
			return all
		}
		return s.registry.LiveMatching(e.job.OnReplicas)
	}
	if !slices.ContainsFunc(entries, func(e *entry) bool { return len(liveFor(e)) > followersPerJob }) {
		return nil
	}
	if len(all) > 0 && len(entries)*followersPerJob/len(all) > 2*maxFollowedKeys {
		// Far beyond the bound: not worth ranking every job (about 1 µs a
		// job on 10 replicas, BenchmarkFollowers: 0.1 s for 100,000, at
		// every change of the runtime jobs).
		return nil
	}
	fs := &followSet{jobs: map[string]struct{}{}}
	for _, e := range entries {
		name := jobOf(e.job.Name)
		if _, ok := fs.jobs[name]; ok {
			continue
		}
		if e.job.RunOn == job.RunOnEveryReplica {
			// Its own record (a suspension for every replica) and every
			// replica's record of it (sweep.go sweeps a gone replica's).
			fs.jobs[name] = struct{}{}
			fs.keys = append(fs.keys, name, name+replicaRecordSep+">")
			continue
		}
		e.mu.Lock()
		running := e.running > 0
		e.mu.Unlock()
		if running || s.followsAmong(e, liveFor(e)) {
			fs.jobs[name] = struct{}{}
			fs.keys = append(fs.keys, name)
		}
	}
	if len(fs.keys) > maxFollowedKeys {
		return nil
	}
	slices.Sort(fs.keys)
	return fs
}

// same reports whether a and b follow the same keys.
func (a *followSet) same(b *followSet) bool {
	if a == nil || b == nil {
		return a == b
	}
	return slices.Equal(a.keys, b.keys)
}

// followLoop keeps the record watch on the follow set until ctx is done,
// from current, made of madeOf: it looks at the live replicas and the
// jobs every followCheck, and as soon as a replica joins or leaves, and
// refollows when the set they make has changed. (At once: replicas that
// start together each see a few of the others first, and followed every
// record, or a wrong share, for a second.)
func (s *Scheduler) followLoop(ctx context.Context, current *followSet, madeOf followInputs) {
	// Real time, whatever clock the scheduler runs on: the live set
	// changes in real time (registry.Live), and a test's fake clock would
	// count the ticker among its waiters.
	t := time.NewTicker(followCheck)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.registry.Joined(): // the live set grew or shrank: at once
		}
		in := s.followInputs()
		if in == madeOf {
			continue
		}
		want := s.wantedFollowSet()
		if !want.same(current) {
			if err := s.claims.refollow(ctx, s.history, want); err != nil {
				if ctx.Err() != nil {
					return // shutting down
				}
				s.log.Warn().Err(err).Msg("cannot change the records this replica follows; keeping the current ones")
				continue
			}
			current = want
			s.unfollowed()
			s.logFollowSet(want)
		}
		madeOf = in
	}
}

// refollow replaces the watch's followers with followers of fs (nil: every
// record), then forgets the views of the jobs it no longer follows. The
// new followers start before the old stop, so no write goes unseen.
func (c *claims) refollow(ctx context.Context, h *History, fs *followSet) error {
	// While the new followers catch up, the watch takes the jobs of both
	// sets: a key new to this replica is first delivered by them.
	c.mu.Lock()
	if fs == nil {
		c.only = nil
	} else if c.only != nil {
		both := maps.Clone(c.only)
		maps.Copy(both, fs.jobs)
		c.only = both
	}
	c.mu.Unlock()
	var next []*follow.Follower
	if fs == nil {
		f, err := h.store.Bucket().Follow(ctx, c.deliver)
		if err != nil {
			return err
		}
		next = append(next, f)
	}
	for keys := range slices.Chunk(fsKeys(fs), maxKeysPerFollow) {
		f, err := h.store.Bucket().FollowKeys(ctx, keys, c.deliver)
		if err != nil {
			for _, f := range next {
				f.Stop()
			}
			return err
		}
		next = append(next, f)
	}
	c.mu.Lock()
	old := c.fs
	c.fs = next
	if fs == nil {
		c.only = nil
	} else {
		c.only = fs.jobs
		for name := range c.views {
			if _, ok := fs.jobs[jobOf(name)]; !ok {
				delete(c.views, name)
			}
		}
	}
	c.mu.Unlock()
	for _, f := range old {
		f.Stop()
	}
	return nil
}

func fsKeys(fs *followSet) []string {
	if fs == nil {
		return nil
	}
	return fs.keys
}

// follows reports whether the watch follows the job name's record.
func (c *claims) follows(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.followsLocked(name)
}

// followsLocked is follows with c.mu held.
func (c *claims) followsLocked(name string) bool {
	if c.only == nil {
		return true
	}
	_, ok := c.only[name]
	return ok
}

// unfollowed drops what this replica knew from the records it no longer
// follows: the shared-state gauges, which would go on reporting the job as
// it was when the replica stopped following it, and the runs in progress
// for the sweep. The job's followers report and sweep it.
func (s *Scheduler) unfollowed() {
	for _, e := range s.entries() {
		name := e.job.Name
		if s.claims.follows(jobOf(name)) {
			continue
		}
		s.m.state.drop(name)
		s.orphans.note(name, nil) // its followers sweep it (sweep.go)
	}
}

// readSuspendedTimeout bounds the read of a job's record for its status on
// a replica that does not follow it.
const readSuspendedTimeout = time.Second

// suspendedShown is s.suspended(e) for a status: for a job whose record
// this replica does not follow (no view of it), read from the record. It
// does not read while NATS is unreachable: a page of 500 such jobs would
// wait a timeout for each.
func (s *Scheduler) suspendedShown(e *entry) bool {
	if e.job.Suspended || s.claims.follows(jobOf(e.job.Name)) {
		return s.suspended(e)
	}
	if !s.history.store.Bucket().Connected() {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), readSuspendedTimeout)
	defer cancel()
	en, err := s.history.store.Bucket().Last(ctx, e.job.Name)
	return err == nil && en != nil && parseView(en.Header).suspended
}

func (s *Scheduler) logFollowSet(fs *followSet) {
	if fs == nil {
		s.log.Debug().Int("max_followed", maxFollowedKeys).Msg("following every job's record (up to three replicas, or a share of more records than max_followed)")
		return
	}
	s.log.Debug().Int("jobs", len(fs.jobs)).Msg("following the records of this replica's share of the jobs")
}
