package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/app"
	"github.com/cronlock/cronlock/internal/config"
)

// maxNext bounds -n.
const maxNext = 10000

const nextUsage = `
Usage: cronlock next [-c FILE] [-n N] [--from TIME] [JOB]

Prints the next N run times of JOB, one a line, or of every job as
"JOB TIME" lines. Times are RFC 3339 in the job's time zone.

A suspended job (cronlock suspend, or suspended: true in the configuration)
runs at none of these times until it is resumed: its lines end in
"(suspended)", and for JOB a note says so on stderr. The suspensions are
read from NATS when nats.url is set or a 'cronlock run' answers at
nats.embedded.listen (next starts no server of its own); if NATS does not
answer within a few seconds, next warns on stderr and prints the times as
if no job were suspended by the shared state.

Flags (before JOB):
  -c, --config FILE   configuration file (default $CRONLOCK_CONFIG, else cronlock.yaml)
  -n N                number of run times per job (default 5)
  --from TIME         compute run times after TIME (RFC 3339) instead of now
`

// suspendedTimeout bounds next's look at the shared state: the run times
// do not depend on NATS, so next does not wait for it long.
const suspendedTimeout = 5 * time.Second

// suspendedMark ends the lines of a suspended job.
const suspendedMark = "(suspended)"

func (c *cli) next(ctx context.Context, args []string) error {
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
		if c.suspended(ctx, cfg)[j.Name] {
			fmt.Fprintf(c.stderr, "cronlock next: %s is suspended: it runs at none of these times until "+
				"'cronlock resume %s' (and, if set, suspended: true is removed from the configuration)\n", j.Name, j.Name)
		}
		printTimes(c.stdout, "", "", runs)
		return nil
	}
	suspended := c.suspended(ctx, cfg)
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	for _, j := range cfg.Jobs {
		if err := nextLines(tw, j, start, *n, suspended[j.Name]); err != nil {
			return err
		}
	}
	return tw.Flush()
}

func nextLines(tw *tabwriter.Writer, j config.Job, start time.Time, n int, suspended bool) error {
	runs, err := app.NextRuns(j, start, n)
	if err != nil {
		return err
	}
	mark := ""
	if suspended {
		mark = "\t" + suspendedMark
	}
	switch {
	case len(runs) == 0 && j.Timing().Ended(start):
		fmt.Fprintf(tw, "%s\t(ended %s)%s\n", j.Name, j.Timing().End().Format(time.RFC3339), mark)
	case len(runs) == 0:
		fmt.Fprintf(tw, "%s\t(no run within five years)%s\n", j.Name, mark)
	}
	for _, t := range runs {
		fmt.Fprintf(tw, "%s\t%s%s\n", j.Name, t.Format(time.RFC3339), mark)
	}
	return nil
}

// suspended returns which jobs are suspended, by the configuration or, if
// NATS can be reached without starting a server, by the shared state. A
// NATS that does not answer is a warning, not an error: the run times are
// still right for the jobs that are not suspended.
func (c *cli) suspended(ctx context.Context, cfg *config.Config) map[string]bool {
	out := make(map[string]bool, len(cfg.Jobs))
	for _, j := range cfg.Jobs {
		out[j.Name] = app.ConfigSuspended(j)
	}
	log, err := app.NewLogger(cfg.Log, c.stderr)
	if err != nil {
		return out
	}
	ctx, cancel := operatorContext(ctx, suspendedTimeout)
	defer cancel()
	cl, err := app.DialRunning(ctx, cfg, log.Level(zerolog.Disabled))
	if errors.Is(err, app.ErrNoServer) {
		return out
	}
	if err == nil {
		defer cl.Close()
		var shared map[string]bool
		if shared, err = cl.Suspensions(ctx); err == nil {
			for name, s := range shared {
				out[name] = out[name] || s
			}
			return out
		}
	}
	if refused := app.Refused(ctx); refused != nil {
		err = refused
	}
	fmt.Fprintf(c.stderr, "cronlock next: cannot tell which jobs are suspended (%v); "+
		"the times below are as if no replica had suspended any\n", strings.TrimSpace(err.Error()))
	return out
}
