package app

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/config"
	"github.com/cronlock/cronlock/internal/web"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/lock"
	"github.com/cronlock/cronlock/scheduler"
)

// suspendedBy labels suspensions made from the status page in the shared
// history (and so in `cronlock status`).
const suspendedBy = "web"

// cancelledBy labels a run cancelled from the status page or its API.
const cancelledBy = "web"

// webSource is the status page's view of the daemon: it implements
// web.Source over the configuration in effect, the scheduler and the
// shared history, whose job records hold the jobs' locks. Until NATS is up and the buckets are open,
// every method returns an error saying what start-up is doing, which the
// page shows.
type webSource struct {
	d   *Daemon
	log zerolog.Logger

	mu   sync.Mutex
	hist *scheduler.History // opened on first use once the scheduler exists

	byName byName // the file jobs' order for windows of the page

	// triggers tracks the runs started from the page, so that the daemon
	// waits for them before closing the connection they use.
	triggers sync.WaitGroup
}

// webState is what one request works with: a consistent snapshot of the
// daemon's parts.
type webState struct {
	cfg     *config.Config
	runtime *runtimeJobs // nil without runtime jobs
	sched   *scheduler.Scheduler
	locker  *lock.Locker
	js      jetstream.JetStream
	hist    *scheduler.History
}

// notReadyError is the error of every request before the scheduler exists
// and from the start of a shutdown: the page and the API answer 503 (it is
// a web.ErrUnavailable) with its text, such as "cronlock is starting:
// connecting to nats://...: <error>".
type notReadyError struct{ stage string }

func (e notReadyError) Error() string {
	switch {
	case e.stage == stageShuttingDown:
		return "cronlock is shutting down"
	case e.stage == stageStarting:
		return "cronlock is starting"
	}
	return "cronlock is starting: " + e.stage
}

func (notReadyError) Is(target error) bool { return target == web.ErrUnavailable }

// state returns the daemon's parts, or a notReadyError with the stage of
// start-up while NATS is not up or the buckets are not open.
func (s *webSource) state(ctx context.Context) (webState, error) {
	s.d.mu.Lock()
	st := webState{cfg: s.d.cfg, runtime: s.d.runtime.Load(), sched: s.d.sched, locker: s.d.locker}
	s.d.mu.Unlock()
	if st.sched == nil || s.d.schedCtx.Err() != nil {
		return webState{}, notReadyError{stage: oneLine(*s.d.stage.Load())}
	}
	st.js = s.d.conn.Load().JS
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hist == nil {
		h, err := scheduler.OpenHistory(ctx, st.js, HistoryOptions(st.cfg))
		if err != nil {
			return webState{}, err
		}
		s.hist = h
	}
	st.hist = s.hist
	return st, nil
}

// configJob returns the job called name in the configuration in effect, or
// an error wrapping web.ErrNotFound.
func configJob(cfg *config.Config, name string) (config.Job, error) {
	for _, j := range cfg.Jobs {
		if j.Name == name {
			return j, nil
		}
	}
	return config.Job{}, fmt.Errorf("job %q: %w", name, web.ErrNotFound)
}

// Jobs returns the jobs q selects of the configuration in effect (file
// order) and the runtime jobs after them, each with this replica's
// schedule view, the shared state and, while a replica runs it, the lock
// holder. Only the selected jobs' records are read.
func (s *webSource) Jobs(ctx context.Context, q web.JobQuery) (web.JobList, error) {
	st, err := s.state(ctx)
	if err != nil {
		return web.JobList{}, err
	}
	// Only the selected jobs' statuses are built: all of them, at 100,000
	// jobs, were 30 MB of garbage at every poll of the page.
	sel := selectJobs(st.cfg, s.byName.of(st.cfg), st.runtime.list(), q)
	out := web.JobList{Jobs: make([]web.Job, 0, len(sel.Refs)), Total: sel.Total, Before: sel.Before}
	for _, r := range sel.Refs {
		ss, ok := st.sched.Job(r.Name)
		v := runtimeView(ss)
		if r.Source == SourceFile {
			v = fileView(st.cfg.Jobs[r.Index])
		} else if !ok {
			continue // removed meanwhile
		}
		j, _, err := s.job(ctx, st, v, ss)
		if err != nil {
			return web.JobList{}, err
		}
		out.Jobs = append(out.Jobs, j)
	}
	return out, nil
}

// jobView is what a job's row shows of its definition: from the file's
// config.Job, or for a runtime job from the scheduler's view of it (a
// runtime job keeps no config.Job).
type jobView struct {
	name, spec, source string
	loc                *time.Location
	end                time.Time // its end_at or a one-off's at; zero if none
	// definition is a runtime job's definition hash (job.Job.Definition);
	// a file job's is computed from file when a claim recorded one.
	definition string
	file       *config.Job
}

func fileView(cj config.Job) jobView {
	t := cj.Timing()
	return jobView{name: cj.Name, spec: t.Spec(), source: SourceFile, loc: cj.Location, end: t.End(), file: &cj}
}

// otherDefinition is recorded, the definition hash of the job's last
// claim, when it is not v's ("" when it is, or when none was recorded).
func (v jobView) otherDefinition(recorded string) string {
	if v.file != nil {
		return OtherDefinition(*v.file, recorded)
	}
	if recorded == "" || recorded == v.definition {
		return ""
	}
	return recorded
}

func runtimeView(ss scheduler.Status) jobView {
	return jobView{name: ss.Name, spec: ss.Schedule, source: SourceRuntime, loc: ss.Location, definition: ss.Definition, end: ss.End}
}

// lookup returns the view of the job called name, a file job or else a
// runtime job (rj set), with the scheduler's status of it; else an error
// wrapping web.ErrNotFound.
func (st webState) lookup(name string) (v jobView, ss scheduler.Status, rj *runtimeJob, err error) {
	ss, _ = st.sched.Job(name)
	cj, err := configJob(st.cfg, name)
	if err == nil {
		return fileView(cj), ss, nil, nil
	}
	if rj, ok := st.runtime.job(name); ok && ss.Name == name {
		return runtimeView(ss), ss, rj, nil
	}
	return jobView{}, ss, nil, err
}

// job builds one job's row and returns its shared state with it.
func (s *webSource) job(ctx context.Context, st webState, v jobView, ss scheduler.Status) (web.Job, scheduler.JobState, error) {
	every := ss.RunOn == job.RunOnEveryReplica || v.file != nil && RunsOnEveryReplica(*v.file)
	shared, err := sharedState(ctx, st.hist, every, v.name)
	var bad *scheduler.CorruptError
	if err != nil && !errors.As(err, &bad) {
		return web.Job{}, scheduler.JobState{}, err
	}
	j := web.Job{
		Name:      v.name,
		Source:    v.source,
		Schedule:  v.spec,
		Timezone:  v.loc.String(),
		Suspended: ss.Suspended || shared.Suspended != nil,
	}
	if bad != nil { // only this job's row says so; the others are whole
		j.State, j.Error = web.StateCorrupt, bad.Error()
	}
	j.OtherDefinition = v.otherDefinition(shared.Definition)
	if !j.Suspended {
		j.Next = ss.Next.UTC()
	}
	if !v.end.IsZero() && ss.Next.IsZero() && v.end.Before(time.Now()) {
		j.Ended = v.end.UTC()
	}
	if len(shared.Runs) > 0 {
		last := shared.Runs[0]
		j.LastStatus, j.LastStart, j.LastEnd = string(last.Status), last.Start, last.End
		j.LastDurationSeconds = last.Duration().Seconds()
	}
	glance(&j, shared.Runs, v.loc)
	// The lock is in the same record: no read of its own (a corrupt
	// record holds none anyone can read).
	if h := shared.Holder; h != nil {
		j.Running, j.Holder, j.Token = true, h.Owner, h.Token
	}
	for _, r := range shared.Runs { // runs under overlap allow hold no record
		if !j.Running && r.Status == scheduler.StatusRunning && r.Parallel {
			j.Running, j.Holder, j.Token = true, r.Owner, r.Token
		}
	}
	if every {
		j.Running = j.Running || runningOnReplicas(shared.Runs) // each replica's run holds a lock of its own
	}
	return j, shared, nil
}

// Job returns one job with its lock and its runs, newest first, each with
// its output tail.
func (s *webSource) Job(ctx context.Context, name string) (web.JobDetail, error) {
	st, err := s.state(ctx)
	if err != nil {
		return web.JobDetail{}, err
	}
	v, ss, rj, err := st.lookup(name)
	if err != nil {
		return web.JobDetail{}, err
	}
	j, shared, err := s.job(ctx, st, v, ss)
	if err != nil {
		return web.JobDetail{}, err
	}
	d := web.JobDetail{Job: j, Runs: make([]web.Run, 0, len(shared.Runs))}
	if rj != nil {
		d.Definition, d.Revision = rj.Definition, rj.Revision
	}
	d.Settings = st.settings(v, rj)
	if b := shared.Backfill; b != nil {
		d.Backfill = &web.Backfill{From: b.From, To: b.To, Next: b.Next, Total: b.Total, Done: b.Done, By: b.By}
	}
	if h := shared.Holder; h != nil {
		d.Lock = &web.Lock{Owner: h.Owner, Token: h.Token, AcquiredAt: h.AcquiredAt, ExpiresAt: h.ExpiresAt}
	}
	for _, r := range shared.Runs {
		wr := webRun(r)
		if r.Finished() && !r.Start.IsZero() { // only runs that ran can have output
			if wr.Output, err = st.hist.Output(ctx, r); err != nil {
				return web.JobDetail{}, err
			}
		}
		d.Runs = append(d.Runs, wr)
	}
	return d, nil
}

// webRun is r as the page shows it, without its output.
func webRun(r scheduler.Run) web.Run {
	return web.Run{
		Tick: r.Tick, Status: string(r.Status), Attempts: r.Attempts, Start: r.Start, End: r.End,
		DurationSeconds: r.Duration().Seconds(), ExitCode: r.ExitCode, Error: r.Error,
		Owner: r.Owner, Token: r.Token, Manual: r.Manual, Reason: string(r.Reason), By: r.By, Failed: r.Failed(), Backfill: r.Backfill,
	}
}

// Replicas returns the live replicas from the replicas bucket (none whose
// last announcement is older than its TTL, whatever the bucket holds), with
// each one's clock offset relative to this replica when both are measured.
func (s *webSource) Replicas(ctx context.Context) ([]web.Replica, error) {
	st, err := s.state(ctx)
	if err != nil {
		return nil, err
	}
	reps, err := scheduler.ListReplicas(ctx, st.js, st.cfg.Replicas.Bucket)
	if err != nil {
		return nil, err
	}
	self := st.locker.Options().OwnerID
	var own *float64 // the NATS server's clock minus ours
	for _, r := range reps {
		if r.ID == self {
			own = r.ClockOffsetSeconds
		}
	}
	out := make([]web.Replica, 0, len(reps))
	for _, r := range reps {
		w := web.Replica{Owner: r.ID, Host: r.Host, PID: r.PID, Version: r.Version, Started: r.Started,
			Seen: r.Seen.UTC(), Running: r.Running, Labels: r.Labels}
		if w.Labels == nil {
			w.Labels = map[string]string{}
		}
		if own != nil && r.ClockOffsetSeconds != nil {
			// Each offset is the server's clock minus the replica's, so
			// theirs minus ours is ours minus theirs of the server's.
			off := *own - *r.ClockOffsetSeconds
			w.ClockOffsetSeconds = &off
		}
		out = append(out, w)
	}
	return out, nil
}

// Suspend marks the job suspended in the shared history: every replica
// stops starting it within a second.
func (s *webSource) Suspend(ctx context.Context, name string) error {
	st, err := s.known(ctx, name)
	if err != nil {
		return err
	}
	return st.hist.Suspend(ctx, name, suspendedBy, time.Now())
}

// Resume lifts the job's suspension on every replica.
func (s *webSource) Resume(ctx context.Context, name string) error {
	st, err := s.known(ctx, name)
	if err != nil {
		return err
	}
	return st.hist.Resume(ctx, name)
}

// Cancel stops the job's running run wherever it runs (see
// scheduler.History.Cancel); a job that runs nothing is a conflict (409),
// not a failure.
func (s *webSource) Cancel(ctx context.Context, name string) error {
	st, err := s.known(ctx, name)
	if err != nil {
		return err
	}
	ss, _ := st.sched.Job(name)
	cj, cerr := configJob(st.cfg, name)
	every := ss.RunOn == job.RunOnEveryReplica || cerr == nil && RunsOnEveryReplica(cj)
	_, err = cancelRuns(ctx, st.hist, name, every, scheduler.CancelOptions{By: cancelledBy})
	switch {
	case errors.Is(err, scheduler.ErrNotRunning):
		return busyError{fmt.Errorf("%w: nothing to cancel", err)}
	case errors.Is(err, scheduler.ErrSeveralRunning):
		return busyError{fmt.Errorf("%w; cancel one with 'cronlock cancel --tick TIME %s'", err, name)}
	}
	return err
}

// Backfill starts (or lists) a backfill of the job with the schedule this
// replica runs it on (see scheduler.History.Backfill); a range it refuses is a 400 naming the
// range, one in progress a conflict.
func (s *webSource) Backfill(ctx context.Context, name string, from, to time.Time, by string, dryRun bool) ([]time.Time, error) {
	st, err := s.known(ctx, name)
	if err != nil {
		return nil, err
	}
	ticks, err := st.sched.Backfill(ctx, name, scheduler.BackfillOptions{From: from, To: to, By: by, DryRun: dryRun})
	switch {
	case errors.Is(err, scheduler.ErrBackfillRange):
		return nil, &web.DefinitionError{Field: "to", Msg: err.Error()}
	case errors.Is(err, scheduler.ErrBackfillRunning):
		return nil, busyError{err}
	}
	return ticks, err
}

// known returns the daemon's parts after checking that name is a job of
// the configuration in effect or a scheduled runtime job.
func (s *webSource) known(ctx context.Context, name string) (webState, error) {
	st, err := s.state(ctx)
	if err != nil {
		return webState{}, err
	}
	if _, _, _, err := st.lookup(name); err != nil {
		return webState{}, err
	}
	return st, nil
}

// Trigger starts a manual run of the job on this replica and answers once
// it is under way (recorded as started in the history), without waiting for
// it to end: the page's button should not hang for the length of a run.
// The run goes through the scheduler, so it is recorded as manual and a
// shutdown waits for it like for any run. A job whose lock is held (running
// here or elsewhere) is refused with an error naming the holder.
func (s *webSource) Trigger(ctx context.Context, name string) error {
	st, err := s.known(ctx, name)
	if err != nil {
		return err
	}
	if h, err := st.holder(ctx, name); err == nil {
		return busy(name, h)
	} else if !errors.Is(err, lock.ErrNotHeld) {
		return err
	}
	started := make(chan scheduler.Run, 1)
	done := make(chan error, 1)
	s.triggers.Go(func() {
		// Not the request's context: the run outlives the request. The
		// scheduler cancels it when its shutdown grace is over.
		_, err := st.sched.TriggerRun(context.Background(), name, func(r scheduler.Run) { started <- r })
		done <- err
		log := s.log.With().Str("job", name).Logger()
		if err != nil {
			log.Warn().Err(err).Msg("manual run from the status page did not succeed")
		} else {
			log.Info().Msg("manual run from the status page succeeded")
		}
	})
	select {
	case <-started:
		return nil
	case err := <-done:
		select {
		case <-started: // it started and ended already: its status is in the history
			return nil
		default:
			return s.startError(ctx, st, name, err)
		}
	case <-ctx.Done():
		return ctx.Err()
	}
}

// busy is the error for a trigger of a job whose lock is held.
func busy(name string, h lock.Holder) error {
	return busyError{fmt.Errorf("job %q is running already on %s (token %d): %w; trigger it again once that run ends",
		name, h.Owner, h.Token, lock.ErrNotAcquired)}
}

// startError is the answer for a manual run that could not start: busy
// (naming the holder) when its lock was taken meanwhile, else the reason.
func (s *webSource) startError(ctx context.Context, st webState, name string, err error) error {
	if !errors.Is(err, lock.ErrNotAcquired) {
		return err
	}
	if h, herr := st.holder(ctx, name); herr == nil {
		return busy(name, h)
	}
	return busyError{fmt.Errorf("job %q is running already on another replica: %w", name, err)}
}

// busyError is an action refused for the job's state (a trigger of a job
// that runs, a cancel of one that does not): a state, not a failure. It matches web.ErrConflict (409, and no error in the log)
// besides what it wraps (lock.ErrNotAcquired).
type busyError struct{ err error }

func (e busyError) Error() string   { return e.err.Error() }
func (e busyError) Unwrap() []error { return []error{e.err, web.ErrConflict} }
