package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cronlock/cronlock/scheduler"
)

var replicasUsage = fmt.Sprintf(`
Usage: cronlock replicas [-c FILE] [--json]

Lists the live replicas (cronlock run) that announce themselves in NATS:
owner id, host, labels (replica.labels), pid, version, start time, when it
was last seen (its last announcement, by the NATS server's clock), the jobs
each runs now, and its clock offset (the NATS server's clock minus its own) once it has an
estimate. Announcements are refreshed every %[2]v: a replica that stops
disappears at once; one not seen for %[1]v (by the server's clock) is not
live and not listed, even while NATS still holds its announcement.

Flags:
  -c, --config FILE   configuration file (default $CRONLOCK_CONFIG, else cronlock.yaml)
  --json              print a JSON array of {"id","host","pid","version","labels","started",
                      "running","clock_offset_seconds","seen"}; labels is {} for none;
                      clock_offset_seconds is null before the replica's first
                      estimate; seen is the time of its last announcement, RFC 3339
                      in UTC
`, scheduler.ReplicaTTL, scheduler.ReplicaTTL/3)

// replicaJSON is one element of `replicas --json`: a public format.
type replicaJSON struct {
	ID                 string            `json:"id"`
	Host               string            `json:"host"`
	PID                int               `json:"pid"`
	Version            string            `json:"version"`
	Labels             map[string]string `json:"labels"`
	Started            time.Time         `json:"started"`
	Running            []string          `json:"running"`
	ClockOffsetSeconds *float64          `json:"clock_offset_seconds"`
	Seen               time.Time         `json:"seen"`
}

func (c *cli) replicas(ctx context.Context, args []string) error {
	fs := c.newFlags("replicas", replicasUsage, true)
	asJSON := fs.Bool("json", false, "JSON output")
	if err := fs.parse(args, 0); err != nil {
		return err
	}
	ctx, cl, done, err := c.query(ctx, fs)
	if err != nil {
		return err
	}
	defer done()
	reps, err := cl.Replicas(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		out := make([]replicaJSON, 0, len(reps))
		for _, r := range reps {
			out = append(out, toReplicaJSON(r))
		}
		return writeJSON(c, out)
	}
	if len(reps) == 0 {
		fmt.Fprintln(c.stdout, "no replica is running")
		return nil
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tHOST\tLABELS\tPID\tVERSION\tSTARTED\tSEEN\tCLOCK OFFSET\tRUNNING")
	for _, r := range reps {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, dash(r.Host), dash(labelText(r.Labels)), pidString(r.PID), dash(r.Version),
			r.Started.UTC().Format(time.RFC3339), r.Seen.UTC().Format(time.RFC3339),
			clockOffset(r.ClockOffsetSeconds), dash(strings.Join(r.Running, ",")))
	}
	return tw.Flush()
}

func toReplicaJSON(r scheduler.Replica) replicaJSON {
	running := r.Running
	if running == nil {
		running = []string{}
	}
	labels := r.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	out := replicaJSON{ID: r.ID, Host: r.Host, PID: r.PID, Version: r.Version, Labels: labels, Started: r.Started.UTC(),
		Running: running, Seen: r.Seen.UTC()}
	if r.ClockOffsetSeconds != nil {
		sec := roundSeconds(time.Duration(*r.ClockOffsetSeconds * float64(time.Second)))
		out.ClockOffsetSeconds = &sec
	}
	return out
}

func pidString(pid int) string {
	if pid == 0 {
		return "-"
	}
	return strconv.Itoa(pid)
}

func clockOffset(sec *float64) string {
	if sec == nil {
		return "-"
	}
	return time.Duration(*sec * float64(time.Second)).Round(time.Millisecond).String()
}

// labelText is a replica's labels as sorted "key=value" pairs joined by
// ','; "" for none.
func labelText(labels map[string]string) string {
	pairs := make([]string, 0, len(labels))
	for k, v := range labels {
		pairs = append(pairs, k+"="+v)
	}
	slices.Sort(pairs)
	return strings.Join(pairs, ",")
}
