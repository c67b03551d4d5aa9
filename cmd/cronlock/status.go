package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/cronlock/cronlock/scheduler"
)

const statusUsage = `
Usage: cronlock status [-c FILE] [-n N] [--json]

Shows each job's last runs, newest first, from the history shared by all
replicas: tick (or start time of a manual run), owner, status, duration and
error. Statuses: running, succeeded, failed, timeout, lost (the lease was
lost), cancelled (shutdown), missed (ticks no replica ran), abandoned (the
replica died mid-run).

Flags:
  -c, --config FILE   configuration file (default $CRONLOCK_CONFIG, else cronlock.yaml)
  -n N                runs per job (default 5; 0: all kept, see history.size)
  --json              print a JSON array of {"job", "runs": [{"tick","manual","owner",
                      "token","attempts","start","end","duration_seconds","status","error"}]}
`

// statusJSON is one element of `status --json`: a public format.
type statusJSON struct {
	Job  string    `json:"job"`
	Runs []runJSON `json:"runs"`
}

type runJSON struct {
	Tick            time.Time `json:"tick"`
	Manual          bool      `json:"manual"`
	Owner           string    `json:"owner"`
	Token           uint64    `json:"token"`
	Attempts        int       `json:"attempts"`
	Start           time.Time `json:"start,omitzero"`
	End             time.Time `json:"end,omitzero"`
	DurationSeconds float64   `json:"duration_seconds"`
	Status          string    `json:"status"`
	Error           string    `json:"error"`
}

func (c *cli) status(ctx context.Context, args []string) error {
	fs := c.newFlags("status", statusUsage, true)
	asJSON := fs.Bool("json", false, "JSON output")
	n := fs.Int("n", 5, "runs per job")
	if err := fs.parse(args, 0); err != nil {
		return err
	}
	if *n < 0 {
		return usagef("-n %d: must not be negative", *n)
	}
	ctx, cl, done, err := c.query(ctx, fs)
	if err != nil {
		return err
	}
	defer done()
	hist, err := cl.History(ctx, *n)
	if err != nil {
		return err
	}
	if *asJSON {
		out := make([]statusJSON, 0, len(hist))
		for _, h := range hist {
			s := statusJSON{Job: h.Job.Name, Runs: make([]runJSON, 0, len(h.Runs))}
			for _, r := range h.Runs {
				s.Runs = append(s.Runs, toRunJSON(r))
			}
			out = append(out, s)
		}
		return writeJSON(c, out)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tTICK\tOWNER\tSTATUS\tDURATION\tERROR")
	for _, h := range hist {
		if len(h.Runs) == 0 {
			fmt.Fprintf(tw, "%s\t-\t-\tnever run\t-\t\n", h.Job.Name)
		}
		for _, r := range h.Runs {
			tick := r.Tick.UTC().Format(time.RFC3339)
			if r.Manual {
				tick += " (manual)"
			}
			dur := "-"
			if d := r.Duration(); d > 0 {
				dur = d.Round(time.Millisecond).String()
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", h.Job.Name, tick, dash(r.Owner), r.Status, dur, r.Error)
		}
	}
	return tw.Flush()
}

func toRunJSON(r scheduler.Run) runJSON {
	out := runJSON{
		Tick: r.Tick.UTC(), Manual: r.Manual, Owner: r.Owner, Token: r.Token, Attempts: r.Attempts,
		DurationSeconds: roundSeconds(r.Duration()), Status: r.Status, Error: r.Error,
	}
	if !r.Start.IsZero() {
		out.Start = r.Start.UTC()
	}
	if !r.End.IsZero() {
		out.End = r.End.UTC()
	}
	return out
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
