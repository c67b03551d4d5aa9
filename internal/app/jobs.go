package app

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"time"

	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/config"
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
)

// Job turns a configured job into a job.Job whose Run executes the command
// (or shell line) in its own process group via internal/proc, logging its
// output to log with the job, tick and token. A non-zero exit is a failed
// run whose error is a *proc.ExitError carrying the exit code or signal.
//
// lease is the lock's lease duration. When the lease is lost, the replica
// stops at its local safe deadline, a tenth of the lease before the server
// can let another replica take the lock; the command then gets SIGKILL
// after at most half that margin (1 s with the default 20 s lease) instead
// of its grace, so it is gone before another replica starts the job.
func Job(cj config.Job, lease time.Duration, log zerolog.Logger) job.Job {
	grace := cj.Grace.Duration()
	if grace == 0 {
		grace = -1 // "grace: 0s": SIGKILL right after SIGTERM
	}
	cmd := proc.Command{
		Argv:  cj.Command,
		Shell: cj.Shell,
		Env:   cj.Env,
		Dir:   cj.Dir,
		Grace: grace,
	}
	lostGrace := lease / 20
	name := cj.Name
	return job.Job{
		Name:             name,
		Schedule:         cj.Schedule,
		Location:         cj.Location,
		Timeout:          cj.Timeout.Duration(),
		Retries:          cj.Retries,
		RetryBackoff:     cj.RetryBackoff.Duration(),
		StartingDeadline: cj.StartingDeadline.Duration(),
		Run: func(ctx context.Context) error {
			info, _ := job.FromContext(ctx)
			c := cmd
			c.Logger = log.With().Str("job", name).Time("tick", info.Tick).
				Uint64("token", info.Token).Int("attempt", info.Attempt).Logger()
			// On lease loss, stop with the short grace.
			runCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
			defer cancel(nil)
			stop := context.AfterFunc(ctx, func() {
				cause := context.Cause(ctx)
				if errors.Is(cause, lock.ErrLeaseLost) {
					cause = &proc.StopCause{Err: cause, Grace: lostGrace}
				}
				cancel(cause)
			})
			defer stop()
			return c.Run(runCtx, RunEnv(name, info))
		},
	}
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
	s, err := job.ParseSchedule(cj.Schedule, cj.Location)
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
