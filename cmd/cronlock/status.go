package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cronlock/cronlock/internal/app"
	"github.com/cronlock/cronlock/internal/config"
	"github.com/cronlock/cronlock/internal/inert"
	"github.com/cronlock/cronlock/scheduler"
)

const statusUsage = `
Usage: cronlock status [-c FILE] [-n N] [-v] [--json] [JOB...]

Shows the last runs of each JOB (of every job of the configuration when no
JOB is given), newest first, from the history shared by all replicas: tick (or start time of a manual run), owner, status, duration and
error, and under each failed run the tail of its output (under every run
with -v). Statuses: running, succeeded, failed, timeout, lost (the lease was
lost), cancelled (shutdown), interrupted (rerun follows), abandoned (the
replica died mid-run), missed and skipped (ticks not run, with the reason:
overlap, no_replica, outage, lock_held or suspended, and how many ticks), and
anomaly (a note: a replica repaired the job's shared record, reason future_tick
or corrupt). A job whose shared record cannot be read is shown "corrupt", with
why, and the other jobs as usual. A suspended
job (cronlock suspend, or suspended: true in the configuration) is marked
"(suspended)". A job whose last tick was claimed by another definition of it
(another deployment on the same buckets, or replicas with another
configuration) gets a note saying so ("other_definition" in --json).

With runtime_jobs enabled, the runtime jobs ('cronlock jobs') are shown
after the file's jobs; "source" in --json says "file" or "runtime".

A JOB that neither the configuration nor the runtime jobs define is a
usage error (exit 2).

Flags (before JOB):
  -c, --config FILE   configuration file (default $CRONLOCK_CONFIG, else cronlock.yaml)
  -n N                runs per job (default 5; 0: all kept, see history.size)
  -v                  show the output of every run, not only of failed ones
  --json              print a JSON array of {"job", "source", "suspended", "suspended_at", "suspended_by",
                      "other_definition", "runs": [{"tick","manual","owner","token","attempts","start","end",
                      "duration_seconds","status","reason","ticks","error","exit_code","output"}]};
                      a running run has no attempts, end, duration_seconds, error, exit_code
                      or output yet; exit_code is null for a run that had no process;
                      a job whose shared record is corrupt has "state": "corrupt", an
                      "error" and no runs (a running replica repairs it at its next tick)
`

// stateCorrupt is the "state" of a job whose shared record is corrupt.
const stateCorrupt = "corrupt"

// statusJSON is one element of `status --json`: a public format.
type statusJSON struct {
	Job string `json:"job"`
	// Source is "file" (a job of the configuration file) or "runtime" (a
	// job of the runtime jobs' bucket, cronlock jobs).
	Source    string `json:"source"`
	Suspended bool   `json:"suspended"`
	// SuspendedAt and SuspendedBy describe a suspension through the shared
	// state (cronlock suspend); a job suspended only by its configuration
	// has neither.
	SuspendedAt time.Time `json:"suspended_at,omitzero"`
	SuspendedBy string    `json:"suspended_by,omitempty"`
	// SuspendedNote says why cronlock suspended the job itself
	// (suspend_after_failures); absent for an operator's suspension.
	SuspendedNote string `json:"suspended_note,omitempty"`
	// Backfill is the job's backfill in progress; absent if none.
	Backfill *backfillJSON `json:"backfill,omitempty"`
	Runs     []runJSON     `json:"runs"`
	// State is "corrupt" when the job's shared record cannot be read
	// (Error says why; runs is then empty): a running replica repairs it
	// at the job's next tick. Absent otherwise.
	State string `json:"state,omitempty"`
	Error string `json:"error,omitempty"`
	// OtherDefinition is app.JobHistory's: the runs are another
	// definition's of the job.
	OtherDefinition string `json:"other_definition,omitempty"`
}

// backfillJSON is a backfill in progress in `status --json`.
type backfillJSON struct {
	From  time.Time `json:"from"`
	To    time.Time `json:"to"`
	Next  time.Time `json:"next"`
	Total int       `json:"total"`
	Done  int       `json:"done"`
	By    string    `json:"by,omitempty"`
}

// runJSON is one run of `status --json`. The pointer fields are left out
// for a running run, which does not have them yet.
type runJSON struct {
	Tick            time.Time `json:"tick"`
	Manual          bool      `json:"manual"`
	Backfill        bool      `json:"backfill,omitempty"`
	Owner           string    `json:"owner"`
	Token           uint64    `json:"token"`
	Attempts        *int      `json:"attempts,omitempty"`
	Start           time.Time `json:"start,omitzero"`
	End             time.Time `json:"end,omitzero"`
	DurationSeconds *float64  `json:"duration_seconds,omitempty"`
	Status          string    `json:"status"`
	Reason          string    `json:"reason,omitempty"`
	By              string    `json:"by,omitempty"`
	Ticks           int       `json:"ticks,omitempty"`
	Error           *string   `json:"error,omitempty"`
	ExitCode        exitCode  `json:"exit_code,omitzero"`
	Output          *string   `json:"output,omitempty"`
}

// exitCode is the "exit_code" of a run: left out while it runs (the zero
// value), null when it ended without a process, else the number.
type exitCode struct {
	ended bool
	code  *int
}

func (e exitCode) IsZero() bool { return !e.ended }

func (e exitCode) MarshalJSON() ([]byte, error) {
	if e.code == nil {
		return []byte("null"), nil
	}
	return fmt.Appendf(nil, "%d", *e.code), nil
}

func (c *cli) status(ctx context.Context, args []string) error {
	fs := c.newFlags("status", statusUsage, true)
	asJSON := fs.Bool("json", false, "JSON output")
	n := fs.Int("n", 5, "runs per job")
	verbose := fs.Bool("v", false, "show the output of every run")
	if err := fs.parse(args, -1); err != nil {
		return err
	}
	if *n < 0 {
		return usagef("-n %d: must not be negative", *n)
	}
	cfg, err := fs.load()
	if err != nil {
		return err
	}
	names, err := jobArgs(cfg, fs.Args())
	if err != nil {
		return err
	}
	ctx, cl, done, err := c.queryConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer done()
	if err := loadRuntime(ctx, cl, names...); err != nil {
		return err
	}
	hist, err := cl.History(ctx, *n, names...)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(c, toStatusJSON(hist))
	}
	return writeStatus(c.stdout, hist, *verbose)
}

// jobArgs checks the JOB arguments of status before it connects: each is
// a job of the configuration (else a usage error, exit 2, naming it) or
// may be a runtime job (see jobOrRuntime), and none is a flag written
// after a JOB.
func jobArgs(cfg *config.Config, args []string) ([]string, error) {
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			return nil, usagef("flag %s after an argument: flags come first", a)
		}
		if err := jobOrRuntime(cfg, a); err != nil {
			return nil, err
		}
	}
	return args, nil
}

func toStatusJSON(hist []app.JobHistory) []statusJSON {
	out := make([]statusJSON, 0, len(hist))
	for _, h := range hist {
		s := statusJSON{Job: h.Job.Name, Source: h.Source, Suspended: h.IsSuspended(), Runs: make([]runJSON, 0, len(h.Runs)),
			OtherDefinition: h.OtherDefinition}
		if h.Suspended != nil {
			s.SuspendedAt, s.SuspendedBy, s.SuspendedNote = h.Suspended.At.UTC(), h.Suspended.By, h.Suspended.Note
		}
		if h.Corrupt != "" {
			s.State, s.Error = stateCorrupt, h.Corrupt
		}
		if b := h.Backfill; b != nil {
			s.Backfill = &backfillJSON{From: b.From.UTC(), To: b.To.UTC(), Next: b.Next.UTC(), Total: b.Total, Done: b.Done, By: b.By}
		}
		for _, r := range h.Runs {
			s.Runs = append(s.Runs, toRunJSON(r))
		}
		out = append(out, s)
	}
	return out
}

func toRunJSON(r scheduler.Run) runJSON {
	out := runJSON{
		Tick: r.Tick.UTC(), Manual: r.Manual, Backfill: r.Backfill, Owner: r.Owner, Token: r.Token,
		Status: string(r.Status), Reason: string(r.Reason), By: r.By, Ticks: r.Ticks,
	}
	if !r.Start.IsZero() {
		out.Start = r.Start.UTC()
	}
	if !r.Finished() {
		return out
	}
	dur := roundSeconds(r.Duration())
	out.Attempts, out.DurationSeconds = &r.Attempts, &dur
	out.Error, out.Output = &r.Error, &r.Output
	out.ExitCode = exitCode{ended: true, code: r.ExitCode}
	if !r.End.IsZero() {
		out.End = r.End.UTC()
	}
	return out
}

// writeStatus prints the runs as a table, each failed run (each run with
// verbose) followed by its output, indented, and then a line for each
// suspended job.
func writeStatus(w io.Writer, hist []app.JobHistory, verbose bool) error {
	var rows bytes.Buffer
	tw := tabwriter.NewWriter(&rows, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tTICK\tOWNER\tSTATUS\tDURATION\tERROR")
	var outputs []string // per table row after the header: the output to print under it
	for _, h := range hist {
		name := h.Job.Name
		if h.IsSuspended() {
			name += " (suspended)"
		}
		switch {
		case h.Corrupt != "":
			fmt.Fprintf(tw, "%s\t-\t-\t%s\t-\t%s\n", name, stateCorrupt, oneLine(h.Corrupt))
			outputs = append(outputs, "")
		case len(h.Runs) == 0:
			fmt.Fprintf(tw, "%s\t-\t-\tnever run\t-\t\n", name)
			outputs = append(outputs, "")
		}
		for _, r := range h.Runs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", name, runTick(r), dash(r.Owner), runStatus(r),
				runDuration(r), oneLine(r.Error))
			out := ""
			if verbose || r.Failed() {
				out = r.Output
			}
			outputs = append(outputs, out)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	lines := strings.SplitAfter(strings.TrimSuffix(rows.String(), "\n"), "\n")
	var b strings.Builder
	b.WriteString(strings.TrimRight(lines[0], " \n") + "\n")
	for i, line := range lines[1:] {
		b.WriteString(strings.TrimRight(line, " \n") + "\n")
		if i < len(outputs) {
			writeOutput(&b, outputs[i])
		}
	}
	writeSuspensions(&b, hist)
	writeOtherDefinitions(&b, hist)
	_, err := io.WriteString(w, b.String())
	return err
}

// outputIndent sets a run's output apart from the table rows.
const outputIndent = "    | "

func writeOutput(b *strings.Builder, out string) {
	out = strings.TrimRight(out, "\n")
	if out == "" {
		return
	}
	for line := range strings.SplitSeq(out, "\n") {
		b.WriteString(outputIndent + inert.String(line) + "\n")
	}
}

func writeSuspensions(b *strings.Builder, hist []app.JobHistory) {
	for _, h := range hist {
		if bf := h.Backfill; bf != nil {
			fmt.Fprintf(b, "\n%s: backfill in progress: %d of %d tick(s) started, from %s to %s, by %s ('cronlock cancel --backfill %s' stops it)\n",
				h.Job.Name, bf.Done, bf.Total, bf.From.UTC().Format(time.RFC3339), bf.To.UTC().Format(time.RFC3339), dash(bf.By), h.Job.Name)
		}
		switch {
		case h.Suspended != nil:
			by := dash(h.Suspended.By)
			if h.Suspended.Note != "" {
				by += " (" + h.Suspended.Note + ")"
			}
			fmt.Fprintf(b, "\n%s is suspended since %s by %s: 'cronlock resume %s' resumes it",
				h.Job.Name, h.Suspended.At.UTC().Format(time.RFC3339), by, h.Job.Name)
			if h.ConfigSuspended {
				b.WriteString(" (the configuration suspends it too)")
			}
			b.WriteString("\n")
		case h.IsSuspended():
			fmt.Fprintf(b, "\n%s is suspended by its configuration (suspended: true)\n", h.Job.Name)
		}
	}
}

func runTick(r scheduler.Run) string {
	tick := r.Tick.UTC().Format(time.RFC3339)
	if r.Backfill {
		tick += " (backfill)"
	}
	if r.Manual {
		tick += " (manual)"
	}
	return tick
}

// runStatus is the status, with the reason and tick count of a missed or
// skipped entry.
func runStatus(r scheduler.Run) string {
	if r.By != "" && r.Reason == "" {
		return fmt.Sprintf("%s (by %s)", r.Status, r.By)
	}
	if r.Reason == "" {
		return string(r.Status)
	}
	if r.Ticks > 1 {
		return fmt.Sprintf("%s (%s, %d ticks)", r.Status, r.Reason, r.Ticks)
	}
	return fmt.Sprintf("%s (%s)", r.Status, r.Reason)
}

func runDuration(r scheduler.Run) string {
	if d := r.Duration(); d > 0 {
		return d.Round(time.Millisecond).String()
	}
	return "-"
}

// oneLine keeps a table row on one line, and inert (see package inert).
func oneLine(s string) string {
	return inert.String(strings.Join(strings.Fields(s), " "))
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
