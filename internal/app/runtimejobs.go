package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/config"
	"github.com/cronlock/cronlock/internal/follow"
	"github.com/cronlock/cronlock/internal/jobstore"
	"github.com/cronlock/cronlock/internal/kv"
	"github.com/cronlock/cronlock/scheduler"
)

// Sources of a job, as status --json, /api/jobs and the page show them.
const (
	SourceFile    = "file"
	SourceRuntime = "runtime"
)

// runtimeJobs schedules the definitions of the runtime jobs' bucket beside
// the file's jobs: it follows the bucket (every replica does) and adds,
// replaces and removes the jobs as their definitions change, each within
// the watch's delivery (well under a second). A definition that does not
// validate against this replica's configuration (an unknown kind, a name
// that a file job has) is not scheduled, and says why in the log and in
// refused; it is never dropped from the bucket.
type runtimeJobs struct {
	d     *Daemon
	store *jobstore.Store
	f     *follow.Follower
	log   zerolog.Logger
	maker JobMaker // the jobs' runs, as the file's jobs'
	// caughtUp is set once the definitions stored at the start are
	// scheduled: changes after it are logged at info, those before at
	// debug (a start-up with 100,000 runtime jobs logs one summary line).
	caughtUp atomic.Bool

	mu      sync.Mutex
	jobs    map[string]*runtimeJob // scheduled
	refused map[string]refusedDef  // stored but not scheduled
	// fileNames indexes the file's jobs in effect by name (fileJobNames).
	fileNames map[string]int
	// strings are the strings intern shares; under d.mu.
	strings map[string]string
}

// runtimeJob is one scheduled runtime job: its stored definition, with
// who and when, and the little the replica needs of it besides what the
// scheduler holds. Not its config.Job (about 430 bytes, 42 MB at 100,000):
// the page reads the scheduler's view of the job, and a reload that
// changes a kind decodes the definition again.
type runtimeJob struct {
	jobstore.Stored
	kind string // the kind it runs
	// deleteAt is a one-off's instant when it deletes its definition after
	// its run (after_run: delete); zero otherwise.
	deleteAt time.Time
}

// newRuntimeJob is st scheduled as cj.
func newRuntimeJob(st jobstore.Stored, cj config.Job) *runtimeJob {
	j := &runtimeJob{Stored: st, kind: cj.Kind}
	if cj.AfterRun == config.AfterRunDelete && cj.Cal != nil {
		j.deleteAt = cj.Cal.At
	}
	return j
}

// decoded is a runtime job with the configuration a validation gave it.
type decoded struct {
	j  *runtimeJob
	cj config.Job
}

// refusedDef is a stored definition this replica does not schedule.
type refusedDef struct {
	rev uint64
	why string
	// st is the definition, when it could be read: a reload tries it
	// again (the kind it names may have come).
	st *jobstore.Stored
}

// openRuntimeJobs opens the bucket and starts following it, when cfg
// enables runtime jobs (nil otherwise). Call with d.sched set.
func (d *Daemon) openRuntimeJobs(ctx context.Context, cfg *config.Config) (*runtimeJobs, error) {
	if !cfg.RuntimeJobs.Enabled {
		return nil, nil
	}
	store, err := jobstore.Open(ctx, d.conn.Load().JS, cfg.RuntimeJobs.Bucket, cfg.Lock.Replicas)
	if err != nil {
		return nil, err
	}
	r := &runtimeJobs{d: d, store: store, log: d.log.With().Str("component", "runtime_jobs").Logger(),
		maker: NewJobMaker(d.jobOptions(cfg), d.log), jobs: map[string]*runtimeJob{}, refused: map[string]refusedDef{},
		fileNames: fileJobNames(cfg), strings: map[string]string{}}
	d.runtime.Store(r) // before the follow: its deliveries find it
	if r.f, err = store.Bucket().FollowData(ctx, r.heard); err != nil {
		d.runtime.Store(nil)
		return nil, fmt.Errorf("follow the runtime jobs' bucket %q: %w", cfg.RuntimeJobs.Bucket, err)
	}
	go r.awaitCatchUp(d.schedCtx, cfg.RuntimeJobs.Bucket)
	return r, nil
}

// awaitCatchUp notes when the definitions stored at the start are all
// scheduled: the daemon is ready from then on (Ready), and the memory
// their decoding took is given back.
func (r *runtimeJobs) awaitCatchUp(ctx context.Context, bucket string) {
	started := time.Now()
	select {
	case <-r.f.CaughtUp():
	case <-ctx.Done(): // a shutdown during the catch-up
		return
	}
	r.mu.Lock()
	n, refused := len(r.jobs), len(r.refused)
	r.mu.Unlock()
	r.caughtUp.Store(true)
	r.log.Info().Str("bucket", bucket).Int("jobs", n).Int("refused", refused).
		Float64("seconds", time.Since(started).Seconds()).Msg("runtime jobs scheduled; following the bucket")
	debug.FreeOSMemory()
}

// followRuntimeJobs opens the runtime jobs' bucket and follows it, when the
// configuration enables them, retrying while NATS does not answer. The
// follow ends with ctx (the scheduler's).
func (d *Daemon) followRuntimeJobs(ctx context.Context) error {
	d.mu.Lock()
	cfg := d.cfg
	d.mu.Unlock()
	for wait := openRetryFirst; ; wait = min(wait*2, openRetryMax) {
		actx, cancel := context.WithTimeout(ctx, startupAttempt)
		r, err := d.openRuntimeJobs(actx, cfg)
		cancel()
		if err == nil {
			if r != nil {
				context.AfterFunc(ctx, r.stop)
			}
			return nil
		}
		if ctx.Err() != nil || !transient(err) {
			return err
		}
		d.log.Warn().Err(err).Float64("retry_in_seconds", wait.Seconds()).Msg("cannot open the runtime jobs' bucket yet; retrying")
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

// afterRunTimeout bounds the delete of a one-off's definition after its run.
const afterRunTimeout = 10 * time.Second

// afterRun deletes a runtime one-off's definition (after_run: delete, its
// default) once its tick has a result: it ran (whatever the outcome), or
// was recorded missed; not for a manual run, nor an interrupted run that
// is to be run again. The replica that recorded the result deletes it,
// requiring the revision it scheduled: a definition changed meanwhile
// stays. One that is not deleted (this replica died first) is a one-off
// past its instant: valid, with no next run, shown as ended.
func (d *Daemon) afterRun(r scheduler.Run) {
	rt := d.runtime.Load()
	rj, ok := rt.job(r.Job)
	if !ok || r.Manual || !r.Finished() || r.Status == scheduler.StatusInterrupted ||
		rj.deleteAt.IsZero() || !rj.deleteAt.Equal(r.Tick) {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), afterRunTimeout)
		defer cancel()
		_, err := rt.store.Delete(ctx, rj.Name, rj.Revision, "cronlock (after_run: delete)")
		log := rt.log.With().Str("job", rj.Name).Uint64("revision", rj.Revision).Logger()
		switch {
		case err == nil:
			log.Info().Str("status", string(r.Status)).Msg("one-off run done: its definition is deleted (after_run: delete); its history stays")
		case errors.Is(err, jobstore.ErrRevision), errors.Is(err, jobstore.ErrNotFound):
			log.Info().Err(err).Msg("one-off run done: its definition changed or went meanwhile, and is left as it is")
		default:
			log.Warn().Err(err).Msg("one-off run done, but its definition could not be deleted; it stays, with no next run")
		}
	}()
}

// runtimeCaughtUp reports whether the runtime jobs stored at the start are
// scheduled (true without runtime jobs): until then the replica is not
// ready, so that a rolling update does not stop an old replica before the
// new one schedules them.
func (d *Daemon) runtimeCaughtUp() bool {
	r := d.runtime.Load()
	return r == nil || r.caughtUp.Load()
}

// runtimeJob reports whether name is a scheduled runtime job.
func (d *Daemon) runtimeJob(name string) bool {
	_, ok := d.runtime.Load().job(name)
	return ok
}

// stop ends the follow.
func (r *runtimeJobs) stop() {
	if r != nil && r.f != nil {
		r.f.Stop()
	}
}

// heard applies one write of the bucket: the watch delivers them one at a
// time, in order.
func (r *runtimeJobs) heard(key string, rev uint64, _ time.Time, h nats.Header, value []byte) {
	r.d.mu.Lock()
	defer r.d.mu.Unlock()
	if r.d.schedCtx.Err() != nil {
		return // shutting down: the scheduler takes no job any more
	}
	if kv.IsFree(h) {
		r.remove(key)
		return
	}
	st, err := jobstore.Decode(key, rev, value)
	if err != nil {
		r.refuse(key, rev, err.Error(), nil)
		return
	}
	r.mu.Lock()
	names := r.fileNames
	r.mu.Unlock()
	cj, err := decodeStored(r.d.cfg, names, st)
	if err != nil {
		r.refuse(key, rev, err.Error(), &st)
		return
	}
	st.By = r.intern(st.By)
	cj.Kind = r.intern(cj.Kind)
	r.schedule(newRuntimeJob(st, cj), cj, false)
}

// decodeStored validates a stored definition against cfg, whose file jobs'
// names are names (nil: none to check), as every replica, and the
// operator commands, read it.
func decodeStored(cfg *config.Config, names map[string]int, st jobstore.Stored) (config.Job, error) {
	j, err := cfg.DecodeDefinition("runtime job "+st.Name+" revision "+strconv.FormatUint(st.Revision, 10), st.Definition)
	switch {
	case err != nil:
		return config.Job{}, err
	case j.Name != st.Name:
		return config.Job{}, fmt.Errorf("runtime job %s revision %d: the definition must be one job named %q", st.Name, st.Revision, st.Name)
	}
	if _, ok := names[st.Name]; ok {
		return config.Job{}, fmt.Errorf("runtime job %s revision %d: a job of the configuration file has that name", st.Name, st.Revision)
	}
	return j, nil
}

// schedule adds j as cj, replacing the version scheduled unless its
// definition is the same (who and when changed, not what runs) and force
// is false (a reload changed its kind). Call with d.mu held.
func (r *runtimeJobs) schedule(j *runtimeJob, cj config.Job, force bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.refused, j.Name)
	if old := r.jobs[j.Name]; old != nil {
		if !force && bytes.Equal(old.Definition, j.Definition) {
			r.jobs[j.Name] = j
			return
		}
		if err := r.d.sched.Remove(j.Name); err != nil && !errors.Is(err, scheduler.ErrUnknownJob) {
			r.log.Error().Err(err).Str("job", j.Name).Msg("cannot replace the runtime job; the previous version stays")
			return
		}
		delete(r.jobs, j.Name)
	}
	if err := r.d.sched.Add(r.maker.Job(cj)); err != nil {
		r.refused[j.Name] = refusedDef{rev: j.Revision, why: err.Error(), st: &j.Stored}
		r.log.Error().Err(err).Str("job", j.Name).Uint64("revision", j.Revision).Msg("cannot schedule the runtime job")
		return
	}
	r.jobs[j.Name] = j
	r.changeLog().Str("job", j.Name).Uint64("revision", j.Revision).Str("by", j.By).Msg("runtime job scheduled")
}

// remove stops scheduling the job name. Call with d.mu held.
func (r *runtimeJobs) remove(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.refused, name)
	if r.jobs[name] == nil {
		return
	}
	if err := r.d.sched.Remove(name); err != nil && !errors.Is(err, scheduler.ErrUnknownJob) {
		r.log.Error().Err(err).Str("job", name).Msg("cannot remove the runtime job")
		return
	}
	delete(r.jobs, name)
	r.changeLog().Str("job", name).Msg("runtime job removed")
}

// refuse notes a stored definition that is not scheduled (st, when it
// could be read, for a reload to try again), stopping the version
// scheduled before, if any. Call with d.mu held.
func (r *runtimeJobs) refuse(name string, rev uint64, why string, st *jobstore.Stored) {
	r.remove(name)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refused[name] = refusedDef{rev: rev, why: why, st: st}
	r.log.Error().Str("job", name).Uint64("revision", rev).Str("error", why).
		Msg("runtime job not scheduled: its definition does not validate against this replica's configuration")
}

// intern returns s, or the equal string it returned before: the runtime
// jobs' authors and kinds are few, their definitions many (100,000 copies
// of "signup-service" and "report" otherwise). Call with d.mu held.
func (r *runtimeJobs) intern(s string) string {
	if v, ok := r.strings[s]; ok {
		return v
	}
	if len(r.strings) < maxInterned {
		r.strings[s] = s
	}
	return s
}

// maxInterned bounds intern's table: authors are few unless each change
// names its own.
const maxInterned = 10_000

// changeLog is the log event of one job's change (see caughtUp).
func (r *runtimeJobs) changeLog() *zerolog.Event {
	if r.caughtUp.Load() {
		return r.log.Info()
	}
	return r.log.Debug()
}

// job returns the scheduled runtime job name.
func (r *runtimeJobs) job(name string) (*runtimeJob, bool) {
	if r == nil {
		return nil, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	j, ok := r.jobs[name]
	return j, ok
}

// list returns the scheduled runtime jobs, sorted by name.
func (r *runtimeJobs) list() []*runtimeJob {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	out := make([]*runtimeJob, 0, len(r.jobs))
	for _, j := range r.jobs {
		out = append(out, j)
	}
	r.mu.Unlock()
	slices.SortFunc(out, func(a, b *runtimeJob) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// stored is how many definitions the bucket holds as this replica saw
// them, scheduled or not: what runtime_jobs.max_jobs bounds.
func (r *runtimeJobs) stored() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.jobs) + len(r.refused)
}

// has reports whether the bucket holds a definition named name.
func (r *runtimeJobs) has(name string) bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.jobs[name]
	_, bad := r.refused[name]
	return ok || bad
}

// revalidate checks every runtime job against next, a configuration a
// reload is about to apply: it returns the jobs as next makes them (a
// changed kind changes what they run) and an error naming each job that
// next would not accept (its kind deleted, a file job of its name), which
// rejects the reload. Call with d.mu held.
func (r *runtimeJobs) revalidate(next *config.Config) ([]decoded, error) {
	// allow_commands and the bucket take effect at a restart only: a
	// reload checks the jobs against the kinds and names it brings, and
	// decodes again only the jobs whose kind it changes (100,000 of them
	// take seconds, under d.mu).
	cur := *next
	cur.RuntimeJobs = r.d.cfg.RuntimeJobs
	names := fileJobNames(next)
	changed := changedKinds(r.d.cfg, next)
	var errs []error
	var out []decoded
	out = append(out, r.retryRefused(&cur, names)...)
	for _, j := range r.list() {
		if i, ok := names[j.Name]; ok {
			errs = append(errs, fmt.Errorf("%s:%d: jobs[%d].name: %q is the name of a runtime job (revision %d, by %s); delete it first or rename this job",
				next.Path, next.Jobs[i].Line, i, j.Name, j.Revision, j.By))
			continue
		}
		if !changed[j.kind] {
			continue
		}
		cj, err := decodeStored(&cur, names, j.Stored)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, decoded{j: newRuntimeJob(j.Stored, cj), cj: cj})
	}
	return out, errors.Join(errs...)
}

// retryRefused decodes the refused definitions again against next: those
// it now accepts (their kind has come) are returned to be scheduled; the
// others stay refused, without failing the reload.
func (r *runtimeJobs) retryRefused(next *config.Config, names map[string]int) []decoded {
	r.mu.Lock()
	var sts []jobstore.Stored
	for _, f := range r.refused {
		if f.st != nil {
			sts = append(sts, *f.st)
		}
	}
	r.mu.Unlock()
	var out []decoded
	for _, st := range sts {
		if cj, err := decodeStored(next, names, st); err == nil {
			out = append(out, decoded{j: newRuntimeJob(st, cj), cj: cj})
		}
	}
	return out
}

// changedKinds names the kinds that a and b define differently (or only
// one of them defines).
func changedKinds(a, b *config.Config) map[string]bool {
	out := map[string]bool{}
	for _, c := range []*config.Config{a, b} {
		for _, k := range c.Kinds {
			ka, kb := a.Kind(k.Name), b.Kind(k.Name)
			if ka == nil || kb == nil || !sameKind(*ka, *kb) {
				out[k.Name] = true
			}
		}
	}
	return out
}

// sameKind reports whether two kinds run the same thing (their lines
// aside).
func sameKind(a, b config.Kind) bool {
	a.Line, b.Line = 0, 0
	return reflect.DeepEqual(a, b)
}

// fileJobNames indexes cfg's jobs by name: a runtime job may not take one.
func fileJobNames(cfg *config.Config) map[string]int {
	m := make(map[string]int, len(cfg.Jobs))
	for i := range cfg.Jobs {
		m[cfg.Jobs[i].Name] = i
	}
	return m
}

// apply schedules jobs (from revalidate) as next makes them, and notes
// next's file job names. Call with d.mu held, d.cfg already next.
func (r *runtimeJobs) apply(next *config.Config, jobs []decoded) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.fileNames = fileJobNames(next)
	r.mu.Unlock()
	for _, d := range jobs {
		r.schedule(d.j, d.cj, true)
	}
}

// errDisabled is the answer of the runtime job commands while runtime jobs
// are off.
var errDisabled = errors.New("runtime jobs are not enabled: set runtime_jobs: {enabled: true} in the configuration file and restart cronlock")

// OpenJobStore opens the runtime jobs' store of cfg for an operator command.
func OpenJobStore(ctx context.Context, js jetstream.JetStream, cfg *config.Config) (*jobstore.Store, error) {
	if !cfg.RuntimeJobs.Enabled {
		return nil, errDisabled
	}
	return jobstore.Open(ctx, js, cfg.RuntimeJobs.Bucket, cfg.Lock.Replicas)
}
