package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cronlock/cronlock/lock"
)

const triggerUsage = `
Usage: cronlock trigger [-c FILE] JOB

Runs JOB once now, in this process, under its lock: if the job is running
on a replica the command fails (exit 1) rather than overlap it. The run is
recorded in the shared history as manual. The job's output is logged to
stderr. SIGINT or SIGTERM cancel the run (SIGTERM to the job, SIGKILL after
its grace). Exit code 0 if the run succeeded, 1 otherwise.

Flags (before JOB):
  -c, --config FILE   configuration file (default $CRONLOCK_CONFIG, else cronlock.yaml)
`

func (c *cli) trigger(ctx context.Context, args []string) error {
	fs := c.newFlags("trigger", triggerUsage, true)
	if err := fs.parse(args, 1); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("missing JOB")
	}
	name := fs.Arg(0)
	cfg, err := fs.load()
	if err != nil {
		return err
	}
	if _, err := jobNamed(cfg, name); err != nil {
		return err
	}
	ctx, cancel := operatorContext(ctx, 0)
	defer cancel()
	cl, err := c.dial(ctx, cfg, true)
	if err != nil {
		return err
	}
	defer cl.Close()
	start := time.Now()
	err = cl.Trigger(ctx, name)
	if errors.Is(err, lock.ErrNotAcquired) {
		return fmt.Errorf("job %q is running elsewhere: %w", name, err)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "%s: succeeded in %v\n", name, time.Since(start).Round(time.Millisecond))
	return nil
}
