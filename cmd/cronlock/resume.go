package main

import (
	"context"
	"fmt"

	"github.com/cronlock/cronlock/internal/app"
	"github.com/cronlock/cronlock/internal/config"
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
	return c.onJob(ctx, "resume", resumeUsage, args, func(ctx context.Context, cl *app.Client, name string, cfg *config.Config) error {
		if err := cl.Resume(ctx, name); err != nil {
			return err
		}
		if j, err := app.FindJob(cfg, name); err == nil && app.ConfigSuspended(j) {
			fmt.Fprintf(c.stdout, "resumed %q in NATS, but it stays suspended: its configuration says suspended: true\n", name)
			return nil
		}
		fmt.Fprintf(c.stdout, "resumed %q: replicas start its ticks again from the next one\n", name)
		return nil
	})
}
