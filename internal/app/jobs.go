package app

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"time"

	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/config"
	"github.com/cronlock/cronlock/internal/liveout"
	"github.com/cronlock/cronlock/internal/proc"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/lock"
)

// Environment variables cronlock adds to every job run, on top of its own
// environment and the job's env.
const (
	EnvJob     = "CRONLOCK_JOB"     // the job's name
	EnvTick    = "CRONLOCK_TICK"    // the scheduled instant, RFC 3339 in UTC
	EnvOwner   = "CRONLOCK_OWNER"   // the replica holding the job's lock
	EnvToken   = "CRONLOCK_TOKEN"   // the lock's fencing token, a decimal integer
	EnvAttempt = "CRONLOCK_ATTEMPT" // 1 for the first try of a tick, 2 for the first retry, ...
	// EnvPayload is the job's payload, a JSON object, for a job that has one.
	EnvPayload = "CRONLOCK_PAYLOAD"
)

// JobOptionsFor are the JobOptions that cfg describes.
func JobOptionsFor(cfg *config.Config) JobOptions {
	return JobOptions{
		Lease: cfg.Lock.Lease.Duration(), OutputTail: cfg.History.OutputTail,
		LogLinesPerSecond: cfg.Log.OutputLinesPerSecond, LogBytesPerSecond: cfg.Log.OutputBytesPerSecond,
	}
}

// interruptPolicy maps the config's on_interrupt (validated) to the job's.
func interruptPolicy(s string) job.Interrupt {
	if s == "rerun" {
		return job.InterruptRerun
	}
	return job.InterruptSkip
}

// overlapPolicy is the job's overlap key as a policy (validated by the
// configuration: an unknown one is never here).
func overlapPolicy(s string) job.Overlap {
	o, _ := job.ParseOverlap(s)
	return o
}

// runOnSetting is the job's run_on key as a setting (validated by the
// configuration: an unknown one is never here).
func runOnSetting(s string) job.RunOn {
	r, _ := job.ParseRunOn(s)
	return r
}

// JobOptions are the settings of Job that do not come from the job's own
// configuration.
type JobOptions struct {
	// Lease is the lock's lease duration (see Job).
	Lease time.Duration
	// OutputTail is how many of the last bytes of each run's combined
	// stdout and stderr the run's job.Outcome carries; 0 keeps none.
	OutputTail int
	// LogLinesPerSecond and LogBytesPerSecond are each run's log budget
	// (see proc.Command); 0 means proc's defaults.
	LogLinesPerSecond, LogBytesPerSecond int
	// Output, if not nil, publishes each run's live output (output.go).
	Output OutputSink
}

// Job turns a configured job into a job.Job whose Run executes the command
// (or shell line) in its own process group via internal/proc, logging its
// output to log with the job, tick and token. A non-zero exit is a failed
// run whose error is a *proc.ExitError carrying the exit code or signal.
// Each run records a job.Outcome: the exit code (0, the status, or
// 128+signal; none if the command never started) and the output's tail.
//
// opts.Lease is the lock's lease duration. When the lease is lost, the
// replica stops at its local safe deadline, a tenth of the lease before the
// server can let another replica take the lock; the command then gets
// SIGKILL after at most half that margin (1 s with the default 20 s lease)
// instead of its grace, so it is gone before another replica starts the
// job. The shim also kills the command on its own at the run's lease
// deadline (job.LeaseDeadline), should cronlock itself be frozen.
func Job(cj config.Job, opts JobOptions, log zerolog.Logger) job.Job {
	return NewJobMaker(opts, log).Job(cj)
}

// JobMaker makes the job.Job of configured jobs that share their
// JobOptions and logger, as Job does; the jobs it makes share what their
// runs have in common instead of holding a copy each.
type JobMaker struct{ shared *runShared }

// NewJobMaker returns a JobMaker for jobs run with opts, logging to log.
func NewJobMaker(opts JobOptions, log zerolog.Logger) JobMaker {
	return JobMaker{shared: &runShared{opts: opts, log: log, lostGrace: opts.Lease / 20}}
}

// Job is Job(cj, opts, log) for the maker's opts and log.
func (m JobMaker) Job(cj config.Job) job.Job {
	c := &commandJob{
		name: cj.Name, argv: cj.Command, shell: cj.Shell, env: cj.Env, dir: cj.Dir, grace: cj.Grace.Duration(),
		// The config applies its default itself, so "grace: 0s" means
		// none: SIGKILL right after SIGTERM.
		noGrace: cj.Grace == 0,
		payload: string(cj.Payload),
		run:     m.shared,
	}
	return job.Job{
		Name:                 cj.Name,
		Schedule:             cj.Schedule,
		Calendar:             cj.Cal,
		Location:             cj.Location,
		Timeout:              cj.Timeout.Duration(),
		Retries:              cj.Retries,
		RetryBackoff:         cj.RetryBackoff.Duration(),
		StartingDeadline:     cj.StartingDeadline.Duration(),
		OnInterrupt:          interruptPolicy(cj.OnInterrupt),
		Jitter:               cj.Jitter.Duration(),
		Suspended:            cj.Suspended,
		SuspendAfterFailures: cj.SuspendAfterFailures,
		Overlap:              overlapPolicy(cj.Overlap),
		MaxParallel:          cj.MaxParallel,
		Group:                job.Group{Name: cj.Group, MaxRunning: cj.GroupMaxRunning},
		RunOn:                runOnSetting(cj.RunOn),
		OnReplicas:           cj.OnReplicas,
		Definition:           DefinitionHash(cj),
		Run:                  c.Run,
	}
}

// commandJob is what a configured job's Run needs, kept small: a replica
// holds one per job (100,000 of them: 38 MB as a proc.Command and a
// closure each), and builds the proc.Command and the run's logger per run.
// Its slices and map are the configuration's own, which nothing modifies.
type commandJob struct {
	name, shell, dir string
	payload          string // "" when the job has none
	argv             []string
	env              map[string]string
	grace            time.Duration
	noGrace          bool
	run              *runShared
}

// runShared is what the runs of a JobMaker's jobs have in common.
type runShared struct {
	opts      JobOptions
	log       zerolog.Logger
	lostGrace time.Duration // see Job
}

// Run runs the command once (job.Job.Run).
func (c *commandJob) Run(ctx context.Context) error {
	info, _ := job.FromContext(ctx)
	cmd := proc.Command{
		Argv: c.argv, Shell: c.shell, Env: c.env, Dir: c.dir, Grace: c.grace, NoGrace: c.noGrace,
		LogLinesPerSecond: c.run.opts.LogLinesPerSecond,
		LogBytesPerSecond: c.run.opts.LogBytesPerSecond,
		Logger: c.run.log.With().Str("job", c.name).Time("tick", info.Tick).
			Uint64("token", info.Token).Int("attempt", info.Attempt).Logger(),
		Tail:     proc.NewTail(c.run.opts.OutputTail),
		Deadline: job.LeaseDeadline(ctx),
	}
	runCtx, release := stopOnLeaseLoss(ctx, c.run.lostGrace)
	defer release()
	env := RunEnv(c.name, info)
	if c.payload != "" {
		env = append(env, EnvPayload+"="+c.payload)
	}
	live := c.startOutput(info, &cmd)
	err := cmd.Run(runCtx, env)
	code := exitCode(err)
	if live != nil {
		live.End(code, errText(err))
	}
	job.SetOutcome(ctx, job.Outcome{ExitCode: code, Output: cmd.Tail.String()})
	return err
}

// startOutput starts the run's live output, if the jobs publish it, as
// cmd's Output; nil if not.
func (c *commandJob) startOutput(info job.RunInfo, cmd *proc.Command) *liveout.Stream {
	if c.run.opts.Output == nil {
		return nil
	}
	live := c.run.opts.Output.StartOutput(c.name, info)
	if live != nil {
		cmd.Output = live
	}
	return live
}

// errText is err's message, "" for nil.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// stopOnLeaseLoss returns a context done when ctx is, whose cause, if ctx's
// is lock.ErrLeaseLost, is a proc.StopCause with the short grace lostGrace,
// and a function releasing its resources, to call when the run is over.
func stopOnLeaseLoss(ctx context.Context, lostGrace time.Duration) (context.Context, func()) {
	runCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		cause := context.Cause(ctx)
		if errors.Is(cause, lock.ErrLeaseLost) {
			cause = &proc.StopCause{Err: cause, Grace: lostGrace}
		}
		cancel(cause)
	})
	return runCtx, func() {
		stop()
		cancel(nil)
	}
}

// exitCode is the exit code a run with Run's result err reports: 0 for
// success, the *proc.ExitError's code, or nil when the command did not run
// to an exit (invalid, not started).
func exitCode(err error) *int {
	code := 0
	var ee *proc.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		return nil
	}
	return &code
}

// RunEnv is the extra environment of one run: CRONLOCK_JOB, CRONLOCK_TICK,
// CRONLOCK_OWNER, CRONLOCK_TOKEN and CRONLOCK_ATTEMPT.
func RunEnv(name string, info job.RunInfo) []string {
	return []string{
		EnvJob + "=" + name,
		EnvTick + "=" + info.Tick.UTC().Format(time.RFC3339),
		EnvOwner + "=" + info.Owner,
		EnvToken + "=" + strconv.FormatUint(info.Token, 10),
		EnvAttempt + "=" + strconv.Itoa(info.Attempt),
	}
}

// NextRuns returns the next n ticks of the job strictly after from, in the
// job's location. It stops early if the schedule has no further tick within
// the five years job.Schedule looks ahead.
func NextRuns(cj config.Job, from time.Time, n int) ([]time.Time, error) {
	s, err := cj.Timing().ParsedSchedule()
	if err != nil {
		return nil, err
	}
	out := make([]time.Time, 0, n)
	t := from
	for range n {
		t = s.Next(t)
		if t.IsZero() {
			break
		}
		out = append(out, t)
	}
	return out, nil
}

// sameJob reports whether two configured jobs would behave the same; the
// line where the job is written does not count, nor do its notify targets,
// which a reload replaces without rescheduling the job (notify.SetTargets).
func sameJob(a, b config.Job) bool {
	a.Line, b.Line = 0, 0
	a.Notify, b.Notify = nil, nil
	a.Location, b.Location = nil, nil
	return reflect.DeepEqual(a, b)
}
