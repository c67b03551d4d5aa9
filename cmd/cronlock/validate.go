package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/cronlock/cronlock/internal/app"
	"github.com/cronlock/cronlock/internal/config"
)

const validateUsage = `
Usage: cronlock validate [-c FILE] [--from TIME]

Checks the configuration file and prints each job with its next three run
times. Every problem is reported on stderr as FILE:LINE: FIELD: MESSAGE, with
exit code 2.

Flags:
  -c, --config FILE   configuration file (default $CRONLOCK_CONFIG, else cronlock.yaml)
  --from TIME         compute run times after TIME (RFC 3339) instead of now
`

func (c *cli) validate(_ context.Context, args []string) error {
	fs := c.newFlags("validate", validateUsage, true)
	from := fs.String("from", "", "RFC 3339 time to compute run times from")
	if err := fs.parse(args, 0); err != nil {
		return err
	}
	start, err := parseFrom(*from)
	if err != nil {
		return err
	}
	cfg, err := fs.load()
	if err != nil {
		return err
	}
	// Buffered: a file of 100,000 jobs prints 700,000 lines, a write each
	// unbuffered.
	w := bufio.NewWriter(c.stdout)
	defer w.Flush()
	fmt.Fprintf(w, "%s: valid, %d job(s)\n", cfg.Path, len(cfg.Jobs))
	for _, j := range cfg.Jobs {
		runs, err := app.NextRuns(j, start, 3)
		if err != nil { // config.Load parsed the schedule already
			return err
		}
		fmt.Fprintf(w, "\n%s (line %d)\n", j.Name, j.Line)
		// The zone the ticks are computed in: a CRON_TZ= prefix overrides
		// timezone, and @every is zone-free (UTC).
		zone := j.Location
		if len(runs) > 0 {
			zone = runs[0].Location()
		}
		fmt.Fprintf(w, "  schedule: %s (%s)\n", j.Timing().Spec(), zone)
		if j.Shell != "" {
			fmt.Fprintf(w, "  shell:    %s\n", j.Shell)
		} else {
			fmt.Fprintf(w, "  command:  %s\n", quoteArgv(j.Command))
		}
		printTimes(w, "  next:     ", "            ", runs)
	}
	return nil
}

// parseFrom parses --from, defaulting to now.
func parseFrom(s string) (time.Time, error) {
	if s == "" {
		return time.Now(), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, usagef("--from %q: want an RFC 3339 time such as 2026-01-02T15:04:05Z", s)
	}
	return t, nil
}

// printTimes prints one time a line, the first after first and the others
// after indent; a schedule without ticks prints a note instead.
func printTimes(w io.Writer, first, indent string, ts []time.Time) {
	if len(ts) == 0 {
		fmt.Fprintf(w, "%s(no run within five years)\n", first)
		return
	}
	for i, t := range ts {
		p := indent
		if i == 0 {
			p = first
		}
		fmt.Fprintf(w, "%s%s\n", p, t.Format(time.RFC3339))
	}
}

// quoteArgv renders an argv as ["a", "b c"].
func quoteArgv(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = fmt.Sprintf("%q", a)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// jobNamed returns the job called name, or a usage error.
func jobNamed(cfg *config.Config, name string) (config.Job, error) {
	j, err := app.FindJob(cfg, name)
	if err != nil {
		return j, usagef("%v", err)
	}
	return j, nil
}
