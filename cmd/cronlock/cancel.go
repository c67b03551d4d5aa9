package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cronlock/cronlock/internal/app"
	"github.com/cronlock/cronlock/internal/config"
	"github.com/cronlock/cronlock/scheduler"
)

const cancelUsage = `
Usage: cronlock cancel [-c FILE] [--tick TIME | --backfill] JOB

Stops JOB's running run wherever it runs: within a second its replica
sends SIGTERM to the run's process group, and SIGKILL after the job's
grace (a Go job's context is cancelled). The run is recorded cancelled,
with who cancelled it; it is not retried or rerun, and the lock is freed.
The command waits for the run's result (at most the job's grace and 10 s)
and prints it. Exit 1 if the job is not running (or not at --tick), or
if the run has not ended by then. With --backfill it stops the job's
backfill instead: no further tick of it starts, and a backfill run in
progress is cancelled; exit 1 if no backfill is in progress.

A job with run_on: every_replica runs on each replica: the running run of
every replica (of --tick, if given) is cancelled, and each result printed.

Flags (before JOB):
  -c, --config FILE   configuration file (default $CRONLOCK_CONFIG, else cronlock.yaml)
  --tick TIME         cancel only the run of this tick (RFC 3339)
  --backfill          stop the job's backfill
`

func (c *cli) cancel(ctx context.Context, args []string) error {
	fs := c.newFlags("cancel", cancelUsage, true)
	tickFlag := fs.String("tick", "", "cancel only the run of this tick (RFC 3339)")
	ofBackfill := fs.Bool("backfill", false, "stop the job's backfill")
	name, cfg, err := parseJobArg(fs, args)
	if err != nil {
		return err
	}
	if *ofBackfill {
		if *tickFlag != "" {
			return usagef("--tick and --backfill: give one")
		}
		return c.cancelBackfill(ctx, name, cfg)
	}
	var tick time.Time
	if *tickFlag != "" {
		if tick, err = time.Parse(time.RFC3339Nano, *tickFlag); err != nil {
			return usagef("--tick: %q is not an RFC 3339 time (e.g. 2026-12-01T03:00:00Z)", *tickFlag)
		}
	}
	return c.withJob(ctx, cfg, name, func(ctx context.Context, cl *app.Client, name string, _ *config.Config) error {
		return c.cancelRuns(ctx, cl, name, tick)
	})
}

// cancelRuns cancels the job's running runs (of tick, if not zero) and
// waits for their results.
func (c *cli) cancelRuns(ctx context.Context, cl *app.Client, name string, tick time.Time) error {
	runs, err := cl.CancelAll(ctx, name, tick, operatorLabel("cancel"))
	if errors.Is(err, scheduler.ErrNotRunning) {
		return fmt.Errorf("%q is not running: nothing to cancel (%w)", name, err)
	}
	if err != nil {
		return err
	}
	for _, run := range runs {
		fmt.Fprintf(c.stdout, "cancelling the run of %q for tick %s on %s\n", name, run.Tick.Format(time.RFC3339), run.Owner)
	}
	var errs []error
	for _, run := range runs {
		errs = append(errs, c.awaitCancelled(ctx, cl, run))
	}
	return errors.Join(errs...)
}

// awaitCancelled prints how the cancelled run ended.
func (c *cli) awaitCancelled(ctx context.Context, cl *app.Client, run scheduler.Run) error {
	name, _ := scheduler.RecordJob(run.Job) // an every_replica run's Job is its record's key
	got, err := cl.AwaitCancelled(ctx, run)
	if err != nil {
		return fmt.Errorf("the run of %q for tick %s on %s has not ended (%v): its replica may be of a release "+
			"without cancel, or cut off from NATS; see 'cronlock status %s'", name, run.Tick.Format(time.RFC3339), run.Owner, err, name)
	}
	fmt.Fprintf(c.stdout, "run of %q for tick %s ended %s after %s\n", name, got.Tick.Format(time.RFC3339), got.Status,
		got.Duration().Round(time.Millisecond))
	return nil
}

// cancelBackfill stops the job's backfill.
func (c *cli) cancelBackfill(ctx context.Context, name string, cfg *config.Config) error {
	return c.withJob(ctx, cfg, name, func(ctx context.Context, cl *app.Client, name string, _ *config.Config) error {
		b, err := cl.CancelBackfill(ctx, name, operatorLabel("cancel"))
		if errors.Is(err, scheduler.ErrNotRunning) {
			return fmt.Errorf("%q has no backfill in progress: nothing to cancel", name)
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "stopped the backfill of %q (%d of %d ticks started, from %s to %s)\n", name, b.Done, b.Total,
			b.From.Format(time.RFC3339), b.To.Format(time.RFC3339))
		return nil
	})
}
