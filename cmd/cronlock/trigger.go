package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cronlock/cronlock/internal/app"
	"github.com/cronlock/cronlock/internal/config"
	"github.com/cronlock/cronlock/lock"
	"github.com/cronlock/cronlock/scheduler"
)

// triggerTimeout is the default of trigger --timeout: how long a replica
// has to take the request and start the run.
const triggerTimeout = 10 * time.Second

const triggerUsage = `
Usage: cronlock trigger [-c FILE] [--timeout D] [--no-wait | --local] JOB

Asks the running replicas to run JOB once now: one of them (one that has
JOB in its configuration, not suspended there) takes the request over NATS
and runs JOB under its lock, recorded in the shared history as manual; it
runs even while JOB is suspended by 'cronlock suspend'. The command prints
the run's ID and replica, waits for the result in the shared history and
prints it, with the run's output tail.

The wait ends with the run: there is no limit of its own beyond the job's
timeout. If the replica running it dies, the run's lock expires (lock.lease)
and the command gives up 5s later (exit 1). SIGINT or SIGTERM stop the
wait only: the run goes on ('cronlock status JOB' shows its result).

Exit codes: 0 the run succeeded (or, with --no-wait, started); 1 it failed,
JOB is running elsewhere (its lock is held), or NATS failed; 2 bad usage;
3 no replica took the request within --timeout.

Flags (before JOB):
  -c, --config FILE   configuration file (default $CRONLOCK_CONFIG, else cronlock.yaml)
  --timeout D         how long a replica has to take the request and start
                      the run (default 10s)
  --no-wait           return once the run has started: print its ID and replica
  --local             run JOB in this process instead, under its lock (the
                      behaviour of earlier versions): its output is logged to
                      stderr, and SIGINT or SIGTERM cancel the run (SIGTERM to
                      the job, SIGKILL after its grace)
`

// triggerFlags are trigger's options.
type triggerFlags struct {
	timeout time.Duration
	noWait  bool
	local   bool
}

func (c *cli) trigger(ctx context.Context, args []string) error {
	fs := c.newFlags("trigger", triggerUsage, true)
	var f triggerFlags
	fs.DurationVar(&f.timeout, "timeout", triggerTimeout, "how long a replica has to take the request")
	fs.BoolVar(&f.noWait, "no-wait", false, "return once the run has started")
	fs.BoolVar(&f.local, "local", false, "run the job in this process")
	if err := fs.parse(args, 1); err != nil {
		return err
	}
	switch {
	case fs.NArg() != 1:
		return usagef("missing JOB")
	case f.timeout <= 0:
		return usagef("--timeout %v: must be greater than 0", f.timeout)
	case f.local && f.noWait:
		return usagef("--local and --no-wait: a local run is waited for")
	}
	name := fs.Arg(0)
	cfg, err := fs.load()
	if err != nil {
		return err
	}
	if err := jobOrRuntime(cfg, name); err != nil {
		return err
	}
	ctx, cancel := operatorContext(ctx, 0)
	defer cancel()
	if !f.local {
		return c.triggerRemote(ctx, cfg, name, f)
	}
	cl, err := c.dial(ctx, cfg, true)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := loadRuntime(ctx, cl, name); err != nil {
		return err
	}
	return c.triggerLocal(ctx, cl, name)
}

// dialReplicas connects to the NATS the replicas use, never starting an
// embedded server of its own: no replica could be on it.
func (c *cli) dialReplicas(ctx context.Context, cfg *config.Config, name string) (*app.Client, error) {
	cl, err := c.dialVia(ctx, cfg, false, app.DialRunning)
	switch {
	case errors.Is(err, app.ErrNoServer):
		return nil, usagef("%v: the replicas' embedded server cannot be reached; set nats.embedded.listen "+
			"(e.g. \"127.0.0.1:4222\") for 'cronlock run', or run the job here with 'cronlock trigger --local %s'", err, name)
	case err != nil && cfg.NATS.URL == "":
		// The embedded server is a replica's: none answers, none runs.
		return nil, &exitError{code: exitNoReplica, err: fmt.Errorf("%w: no 'cronlock run' answers at nats.embedded.listen %q: %w",
			app.ErrNoReplica, cfg.NATS.Embedded.Listen, err)}
	}
	return cl, err
}

// triggerLocal runs the job in this process (--local).
func (c *cli) triggerLocal(ctx context.Context, cl *app.Client, name string) error {
	start := time.Now()
	err := cl.Trigger(ctx, name)
	if errors.Is(err, lock.ErrNotAcquired) {
		return fmt.Errorf("job %q is running elsewhere: %w", name, err)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "%s: succeeded in %v\n", name, time.Since(start).Round(time.Millisecond))
	return nil
}

// triggerRemote has a replica run the job and waits for its result.
func (c *cli) triggerRemote(ctx context.Context, cfg *config.Config, name string, f triggerFlags) error {
	cl, err := c.dialReplicas(ctx, cfg, name)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := loadRuntime(ctx, cl, name); err != nil {
		return err
	}
	run, err := cl.TriggerRemote(ctx, name, operatorLabel("trigger"), f.timeout)
	switch {
	case errors.Is(err, app.ErrNoReplica):
		return &exitError{code: exitNoReplica, err: fmt.Errorf("%w; is a 'cronlock run' with job %q running? "+
			"('cronlock trigger --local %s' runs it in this process)", err, name, name)}
	case err != nil: // lock.ErrNotAcquired: "is running elsewhere, on HOLDER"
		return err
	}
	fmt.Fprintf(c.stdout, "%s: run %d started on %s (token %d)\n", name, run.ID, run.Owner, run.Token)
	if f.noWait {
		return nil
	}
	done, err := cl.AwaitRun(ctx, run)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("stopped waiting; run %d goes on on %s: 'cronlock status %s' shows its result", run.ID, run.Owner, name)
		}
		return err
	}
	return c.printResult(done)
}

// printResult prints a finished run and its output tail; it is the error
// of a run that did not succeed.
func (c *cli) printResult(r scheduler.Run) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s in %v on %s (run %d", r.Job, r.Status, r.Duration().Round(time.Millisecond), r.Owner, r.ID)
	if r.ExitCode != nil {
		fmt.Fprintf(&b, ", exit code %d", *r.ExitCode)
	}
	b.WriteString(")\n")
	writeOutput(&b, r.Output)
	fmt.Fprint(c.stdout, b.String())
	if r.Succeeded() {
		return nil
	}
	if r.Error != "" {
		return fmt.Errorf("run %d of %q %s: %s", r.ID, r.Job, r.Status, r.Error)
	}
	return fmt.Errorf("run %d of %q %s", r.ID, r.Job, r.Status)
}
