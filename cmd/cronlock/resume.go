package main

import (
	"context"
	"fmt"

	"github.com/cronlock/cronlock/internal/app"
)

const resumeUsage = `
Usage: cronlock resume [-c FILE] JOB

Lifts the suspension of JOB ('cronlock suspend') for every replica: they
start its ticks again from the next one; the ticks that passed while it
was suspended are not caught up. Resuming a job that is not suspended
changes nothing. A job with suspended: true in the configuration stays
suspended until the key is removed.

Flags (before JOB):
  -c, --config FILE   configuration file (default $CRONLOCK_CONFIG, else cronlock.yaml)
`

func (c *cli) resume(ctx context.Context, args []string) error {
	fs := c.newFlags("resume", resumeUsage, true)
	name, cfg, err := parseJobArg(fs, args)
	if err != nil {
		return err
	}
	ctx, cl, done, err := c.queryConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer done()
	if err := cl.Resume(ctx, name); err != nil {
		return err
	}
	if j, err := app.FindJob(cfg, name); err == nil && app.ConfigSuspended(j) {
		fmt.Fprintf(c.stdout, "resumed %q in NATS, but it stays suspended: its configuration says suspended: true\n", name)
		return nil
	}
	fmt.Fprintf(c.stdout, "resumed %q: replicas start its ticks again from the next one\n", name)
	return nil
}
