package main

import (
	"context"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/cronlock/cronlock/internal/app"
	"github.com/cronlock/cronlock/internal/config"
)

// maxNext bounds -n.
const maxNext = 10000

const nextUsage = `
Usage: cronlock next [-c FILE] [-n N] [--from TIME] [JOB]

Prints the next N run times of JOB, one a line, or of every job as
"JOB TIME" lines. Times are RFC 3339 in the job's time zone.

Flags (before JOB):
  -c, --config FILE   configuration file (default $CRONLOCK_CONFIG, else cronlock.yaml)
  -n N                number of run times per job (default 5)
  --from TIME         compute run times after TIME (RFC 3339) instead of now
`

func (c *cli) next(_ context.Context, args []string) error {
	fs := c.newFlags("next", nextUsage, true)
	n := fs.Int("n", 5, "number of run times")
	from := fs.String("from", "", "RFC 3339 time to compute run times from")
	if err := fs.parse(args, 1); err != nil {
		return err
	}
	if *n < 1 || *n > maxNext {
		return usagef("-n %s: want 1 to %d", strconv.Itoa(*n), maxNext)
	}
	start, err := parseFrom(*from)
	if err != nil {
		return err
	}
	cfg, err := fs.load()
	if err != nil {
		return err
	}
	if fs.NArg() == 1 {
		j, err := jobNamed(cfg, fs.Arg(0))
		if err != nil {
			return err
		}
		runs, err := app.NextRuns(j, start, *n)
		if err != nil {
			return err
		}
		printTimes(c.stdout, "", "", runs)
		return nil
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	for _, j := range cfg.Jobs {
		if err := nextLines(tw, j, start, *n); err != nil {
			return err
		}
	}
	return tw.Flush()
}

func nextLines(tw *tabwriter.Writer, j config.Job, start time.Time, n int) error {
	runs, err := app.NextRuns(j, start, n)
	if err != nil {
		return err
	}
	if len(runs) == 0 {
		fmt.Fprintf(tw, "%s\t(no run within five years)\n", j.Name)
	}
	for _, t := range runs {
		fmt.Fprintf(tw, "%s\t%s\n", j.Name, t.Format(time.RFC3339))
	}
	return nil
}
