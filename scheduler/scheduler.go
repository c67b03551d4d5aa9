package scheduler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/history"
	"github.com/cronlock/cronlock/internal/kv"
	"github.com/cronlock/cronlock/internal/registry"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/lock"
)

// Scheduler runs jobs at their cron ticks, each tick on at most one replica:
// the one whose compare-and-swap write of the job's state record takes the
// job's lock and claims the tick first (see hold.go). Several replicas run
// the same jobs against the same NATS.
type Scheduler struct {
	opts     Options
	clock    clockwork.Clock
	log      zerolog.Logger
	history  *History
	claims   *claims
	registry *registry.Registry
	offset   *registry.OffsetEstimate
	slots    slots
	// gate bounds the claims this replica has in flight (claimgate.go).
	gate *claimGate
	// reconnects ends a result's write in flight when the client
	// reconnects, to send it again at once (result.go).
	reconnects *kv.Reconnects
	due        dueTicks
	deals      deals
	pace       claimPace // how long claims ahead take (ahead.go)
	inflight   inflight
	health     registry.Health
	orphans    *orphans
	timers     *timerQueue
	workers    *workers
	gaps       gapCache
	schedules  scheduleCache
	m          *metrics
	// conflicts finds claims written under another definition of a job.
	conflicts *conflicts
	// holds are the lease timings of the jobs' locks (hold.go); reapers
	// are the goroutines freeing holds whose write had no verdict, which
	// stop when closing is closed.
	holds  holdTimes
	unsure unsureHolds
	// older and legacy serve a rolling update from an older stored
	// format (compat.go): legacy is the lock bucket it used.
	older   olderGate
	legacy  *lock.Locker
	inHand  heldLocks
	groups  groupSlots
	ownRuns parallelRuns
	reapers sync.WaitGroup
	closing chan struct{}
	// followGen counts what changes the follow set besides the live
	// replicas: jobs added and removed, runs begun on jobs not followed
	// (followset.go).
	followGen atomic.Uint64

	// hard is cancelled ShutdownGrace after Run's context is done: it
	// cancels the runs still going.
	hard       context.Context
	hardCancel context.CancelFunc

	mu       sync.Mutex
	jobs     map[string]*entry
	ctx      context.Context // Run's context; nil until Run
	stopping bool
	loops    sync.WaitGroup // the dispatcher, and one per job at work (timers.go)
	runs     sync.WaitGroup // one per run in progress, including Trigger
}

// entry is a registered job and its place in the timer queue.
type entry struct {
	job   job.Job
	sched job.Schedule
	slot  slot // guarded by Scheduler.timers.mu (but slot.last)
	// interval is the longest gap between the schedule's ticks
	// (cronlock_job_interval_seconds).
	interval time.Duration

	mu      sync.Mutex
	next    time.Time
	last    *Run
	running int32
	outage  bool // NATS failed at a tick: catch up once it answers
	// held are the ticks at which the lock was found held since the last
	// claim; nil for none (most jobs: a pointer saves 56 bytes a job).
	held *heldTicks
}

func (e *entry) outageMarked() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.outage
}

// New returns a Scheduler whose identity is locker's owner id and whose
// leases have locker's timings (lock.Options: LeaseDuration,
// RenewInterval, the retry delays), keeping the jobs' locks and shared
// history in the history bucket of js, which it opens (creating it when
// missing) within ctx. The jobs' locks are their state records there (see
// hold.go); locker's bucket serves only a rolling update from a release
// that kept them in it (see StoredFormat). It registers its metrics on
// Options.Registerer last, so a failed New leaves the registry untouched.
func New(ctx context.Context, js jetstream.JetStream, locker *lock.Locker, opts Options) (*Scheduler, error) {
	if locker == nil || js == nil {
		return nil, errors.New("scheduler: New: nil locker or JetStream")
	}
	o, err := opts.withDefaults(locker.Options().OwnerID)
	if err != nil {
		return nil, err
	}
	h, err := OpenHistory(ctx, js, HistoryOptions{Bucket: o.HistoryBucket, Replicas: o.HistoryReplicas, Size: o.HistorySize,
		LeaseDuration: locker.Options().LeaseDuration})
	if err != nil {
		return nil, err
	}
	h.store = history.NewStore(h.store.Bucket(), h.store.Size(), history.NewCache())
	rb, err := registry.Open(ctx, js, o.ReplicaBucket, o.HistoryReplicas)
	if err != nil {
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	var offset *registry.OffsetEstimate
	if !o.LocalClock {
		offset = &registry.OffsetEstimate{}
	}
	self := Replica{ID: o.ReplicaID, Host: o.Host, PID: o.PID, Version: o.Version, Format: StoredFormat, Started: o.Clock.Now().UTC(),
		Labels: o.ReplicaLabels}
	s := &Scheduler{
		opts: o, clock: o.Clock, log: o.Logger, history: h, claims: newClaims(),
		registry: registry.New(rb, self, offset, o.Clock.Now), offset: offset, slots: newSlots(o.MaxConcurrentRuns),
		gate: newClaimGate(maxClaimsInFlight), reconnects: kv.NewReconnects(h.store.Bucket().Conn()),
		jobs: map[string]*entry{}, orphans: newOrphans(), conflicts: newConflicts(), timers: newTimerQueue(), workers: newWorkers(),
		holds: holdTimesOf(locker.Options()), closing: make(chan struct{}), legacy: locker,
		groups: groupSlots{locker: locker, js: js, timeout: o.AcquireTimeout},
	}
	h.repairs = &repairs{now: s.serverNow, report: s.anomaly}
	s.claims.trusted = s.trustedTick
	if s.m, err = newMetrics(o.Registerer, s); err != nil {
		return nil, fmt.Errorf("scheduler: register metrics: %w", err)
	}
	s.hard, s.hardCancel = context.WithCancel(context.Background())
	return s, nil
}

// Add validates j and schedules it. A job with the same name is an error;
// to change a job, Remove it and Add the new version (a run in progress
// finishes, and the lock keeps the new version from overlapping it).
func (s *Scheduler) Add(j job.Job) error {
	sched, err := s.schedules.parse(j)
	if err != nil {
		return j.Validate() // every problem, the schedule's included
	}
	if err := j.ValidateParsed(sched); err != nil {
		return err
	}
	if err := checkDefinition(j); err != nil {
		return err
	}
	j = s.placed(j)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return fmt.Errorf("scheduler: Add %q: %w", j.Name, ErrStopped)
	}
	if _, ok := s.jobs[j.Name]; ok {
		return fmt.Errorf("scheduler: Add: job %q is %w", j.Name, ErrJobExists)
	}
	now := s.now()
	e := &entry{job: j, sched: sched, slot: slot{index: -1}, interval: s.gaps.longestGap(j, sched, now)}
	e.next = sched.Next(now)
	s.jobs[j.Name] = e
	s.followGen.Add(1)
	s.m.jobAdded(j.Name)
	if s.ctx != nil {
		s.startLoop(e)
	}
	return nil
}

// Remove stops scheduling the job. A run in progress is not interrupted.
func (s *Scheduler) Remove(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, key, ok := s.entryNamed(name)
	if !ok {
		return fmt.Errorf("scheduler: Remove: %w %q", ErrUnknownJob, name)
	}
	delete(s.jobs, key)
	s.followGen.Add(1)
	s.stopLoop(e)
	return nil
}

// Run schedules the registered jobs (and those added later) until ctx is
// done, then shuts down: it stops starting runs, waits up to ShutdownGrace
// for the runs in progress, then cancels them, and returns once every run
// has released its lock and every goroutine of the scheduler has ended. It
// returns nil after a shutdown, or an error if called twice. Run fits an
// oklog/run group: execute Run(ctx), interrupt by cancelling ctx.
func (s *Scheduler) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.ctx != nil || s.stopping {
		s.mu.Unlock()
		return errors.New("scheduler: Run called twice")
	}
	s.ctx = ctx
	s.mu.Unlock()
	s.conflicts.arm()
	s.reconnects.Start()
	defer s.reconnects.Stop() // after the runs' results, written in shutdown
	var announcer sync.WaitGroup
	announcer.Go(func() { s.announce(ctx) })
	s.awaitClock(ctx)
	// After the first announcement came back, with the announcements
	// before it: the live replicas the follow set is made for.
	in, fs := s.followInputs(), s.wantedFollowSet()
	if err := s.claims.watch(ctx, s.history, fs, s.stateChanged); err != nil {
		// Not fatal: without it every replica takes the lock at every
		// tick, and suspensions and reruns wait for the next claim.
		s.log.Warn().Err(err).Msg("cannot follow the jobs' shared state; replicas will contend for every tick")
		// None followed, made of nothing: followLoop tries again at once.
		fs, in = &followSet{}, followInputs{}
	}
	announcer.Go(func() { s.sweepLoop(ctx) })
	announcer.Go(func() { s.followLoop(ctx, fs, in) })
	s.loops.Add(1)
	go s.dispatch(ctx)
	s.mu.Lock()
	for _, e := range s.jobs {
		s.startLoop(e)
	}
	s.mu.Unlock()

	<-ctx.Done()
	s.shutdown()
	s.endReapers()
	announcer.Wait()
	s.registry.Leave()
	s.claims.stop()
	return nil
}

func (s *Scheduler) shutdown() {
	s.mu.Lock()
	s.stopping = true
	for name, e := range s.jobs {
		s.stopLoop(e)
		delete(s.jobs, name)
	}
	s.mu.Unlock()
	s.stopLoops()

	done := make(chan struct{})
	go func() {
		s.loops.Wait()
		s.runs.Wait()
		close(done)
	}()
	grace := s.clock.NewTimer(s.opts.ShutdownGrace)
	defer grace.Stop()
	if s.opts.ShutdownNow {
		s.hardCancel()
	}
	select {
	case <-done:
	case <-grace.Chan():
		s.log.Warn().Float64("grace_seconds", s.opts.ShutdownGrace.Seconds()).Msg("shutdown grace over: cancelling running jobs")
		s.hardCancel()
		<-done
	}
	s.hardCancel()
	s.workers.stop()
}

// reapGrace bounds how long a shutdown waits for holds whose write had no
// verdict to be freed (see unholdLater) before it stops trying: the lease
// frees them anyway.
const reapGrace = 2 * time.Second

// endReapers gives the goroutines freeing holds reapGrace, then stops them.
func (s *Scheduler) endReapers() {
	done := make(chan struct{})
	go func() {
		s.reapers.Wait()
		close(done)
	}()
	t := time.NewTimer(reapGrace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
	close(s.closing)
	<-done
}

// Status is a job as this replica sees it.
type Status struct {
	Name string
	// Schedule is the job's job.Job.Spec: its spec, or its specs joined
	// with " | ".
	Schedule string
	Location *time.Location
	Next     time.Time // next tick; zero if the schedule has none
	Running  bool      // a run is in progress on this replica
	LastRun  *Run      // the last run this replica made, or nil
	// Suspended: by the job's own setting, or by an operator (shared). A
	// replica that does not follow the job's record (more than three
	// replicas may run it, and it is not among the job's three followers)
	// reads the record for it.
	Suspended bool
	// Definition is the job's job.Job.Definition; End its job.Job.End (zero
	// when it has none).
	Definition string
	End        time.Time
	// RunOn is the job's job.Job.RunOn: an every_replica job's runs are
	// in a record per replica (History.MergedState).
	RunOn job.RunOn
}

// Jobs returns the registered jobs, sorted by name. It does no I/O but for
// the jobs this replica does not follow (beyond three live replicas, see
// Status.Suspended); for the history shared by all replicas use History.
func (s *Scheduler) Jobs() []Status {
	entries := s.entries()
	out := make([]Status, 0, len(entries))
	for _, e := range entries {
		out = append(out, s.status(e))
	}
	slices.SortFunc(out, func(a, b Status) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Job returns the registered job name as Jobs shows it, and whether there
// is one: for one job, without building every job's status (100,000 of
// them for a page of one job).
func (s *Scheduler) Job(name string) (Status, bool) {
	s.mu.Lock()
	e, _, ok := s.entryNamed(name)
	s.mu.Unlock()
	if !ok {
		return Status{}, false
	}
	return s.status(e), true
}

func (s *Scheduler) status(e *entry) Status {
	suspended := s.suspendedShown(e)
	e.mu.Lock()
	defer e.mu.Unlock()
	st := Status{Name: jobOf(e.job.Name), Schedule: e.job.Spec(), Location: e.job.Location, Next: e.next, Running: e.running > 0,
		Suspended: suspended, Definition: e.job.Definition, End: e.job.End(), RunOn: e.job.RunOn}
	if e.last != nil {
		r := *e.last
		st.LastRun = &r
	}
	return st
}

// History returns the job's recent runs, newest first, as recorded by every
// replica in the shared history bucket.
func (s *Scheduler) History(ctx context.Context, name string) ([]Run, error) {
	return s.history.Runs(ctx, name)
}

// entries returns the registered jobs' entries, in no order.
func (s *Scheduler) entries() []*entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*entry, 0, len(s.jobs))
	for _, e := range s.jobs {
		out = append(out, e)
	}
	return out
}

func (s *Scheduler) lookup(name string) (*entry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.jobs[name]
	return e, ok
}
