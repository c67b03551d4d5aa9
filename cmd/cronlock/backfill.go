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

const backfillUsage = `
Usage: cronlock backfill [-c FILE] --from TIME --to TIME [--dry-run] JOB

Runs, one at a time and oldest first, every tick of JOB's schedule from
--from to --to (RFC 3339, both included) that has no run in the shared
history: ticks that were missed or skipped, or that came before the job
existed. Each runs as a normal run of its tick (CRONLOCK_TICK is that tick),
recorded with backfill: true; a tick that has a run is never run again. At
most 1000 ticks per request; --to at most the job's last claimed tick.
The replicas share the progress: if the one running a tick dies, another
goes on. 'cronlock status JOB' shows it; 'cronlock cancel --backfill JOB'
stops it. --dry-run lists the ticks and starts nothing.

Flags (before JOB):
  -c, --config FILE   configuration file (default $CRONLOCK_CONFIG, else cronlock.yaml)
  --from TIME         first tick of the range (RFC 3339)
  --to TIME           last tick of the range (RFC 3339)
  --dry-run           list the ticks that would run
`

func (c *cli) backfill(ctx context.Context, args []string) error {
	fs := c.newFlags("backfill", backfillUsage, true)
	fromFlag := fs.String("from", "", "first tick of the range (RFC 3339)")
	toFlag := fs.String("to", "", "last tick of the range (RFC 3339)")
	dry := fs.Bool("dry-run", false, "list the ticks that would run")
	name, cfg, err := parseJobArg(fs, args)
	if err != nil {
		return err
	}
	from, err := rfc3339Flag("--from", *fromFlag)
	if err != nil {
		return err
	}
	to, err := rfc3339Flag("--to", *toFlag)
	if err != nil {
		return err
	}
	return c.withJob(ctx, cfg, name, func(ctx context.Context, cl *app.Client, name string, _ *config.Config) error {
		ticks, err := cl.Backfill(ctx, name, from, to, operatorLabel("backfill"), *dry)
		switch {
		case errors.Is(err, scheduler.ErrBackfillRange):
			return usagef("%v", err)
		case err != nil:
			return err
		}
		c.printBackfill(name, ticks, *dry)
		return nil
	})
}

func (c *cli) printBackfill(name string, ticks []time.Time, dry bool) {
	switch {
	case len(ticks) == 0:
		fmt.Fprintf(c.stdout, "%s: every tick of the range has a run: nothing to backfill\n", name)
		return
	case dry:
		fmt.Fprintf(c.stdout, "%s: %d tick(s) would run, oldest first:\n", name, len(ticks))
	default:
		fmt.Fprintf(c.stdout, "%s: backfilling %d tick(s), oldest first, one at a time; 'cronlock status %s' shows the progress:\n",
			name, len(ticks), name)
	}
	for _, t := range ticks {
		fmt.Fprintln(c.stdout, t.UTC().Format(time.RFC3339))
	}
}

// rfc3339Flag parses a required RFC 3339 flag value.
func rfc3339Flag(flag, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, usagef("%s is required (RFC 3339, e.g. 2026-12-01T03:00:00Z)", flag)
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, usagef("%s: %q is not an RFC 3339 time (e.g. 2026-12-01T03:00:00Z)", flag, v)
	}
	return t, nil
}
