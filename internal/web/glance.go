package web

import (
	"fmt"
	"math"
	"time"
)

// The history at a glance: the overview's strip of a job's newest runs
// with their success rate, and the job view's duration chart and settings.
// assets/static/app.js draws the same from the API (its "history at a
// glance" section mirrors the functions here).

// MaxRecentRuns is the most runs a job's strip shows (Job.RecentRuns). The
// history keeps history.size runs per job (default 20), so the strip shows
// up to that many.
const MaxRecentRuns = 30

// RecentRun is one cell of a job's strip: the little the overview shows of
// a run, to keep GET /api/jobs small at many jobs.
type RecentRun struct {
	Tick            time.Time `json:"tick"`
	Status          string    `json:"status"`
	DurationSeconds float64   `json:"duration_seconds"`
	// Failed is as Run.Failed.
	Failed bool `json:"failed,omitempty"`
}

// Settings is a job's definition as it runs, under the configuration's key
// names, for the job view. Only keys set to other than their defaults are
// present; durations are Go duration texts ("1m30s").
type Settings struct {
	// One of Kind (the command comes from the kind), Command and Shell.
	Kind             string   `json:"kind,omitempty"`
	Command          []string `json:"command,omitempty"`
	Shell            string   `json:"shell,omitempty"`
	Dir              string   `json:"dir,omitempty"`
	Timeout          string   `json:"timeout,omitempty"`
	Retries          int      `json:"retries,omitempty"`
	RetryBackoff     string   `json:"retry_backoff,omitempty"`
	StartingDeadline string   `json:"starting_deadline,omitempty"`
	StartAt          string   `json:"start_at,omitempty"`
	EndAt            string   `json:"end_at,omitempty"`
	Jitter           string   `json:"jitter,omitempty"`
	Grace            string   `json:"grace,omitempty"`
	OnInterrupt      string   `json:"on_interrupt,omitempty"`
	// Run control: absent at their defaults (skip, 1, no group, one).
	// The page shows whichever the daemon fills.
	Overlap     string `json:"overlap,omitempty"`
	MaxParallel int    `json:"max_parallel,omitempty"`
	Group       string `json:"group,omitempty"`
	RunOn       string `json:"run_on,omitempty"`
	// OnReplicas are the labels a replica must have to run the job
	// (on_replicas); absent for any replica.
	OnReplicas map[string]string `json:"on_replicas,omitempty"`
}

// cellStatuses are the statuses a strip cell or chart bar has a colour of
// its own for; failures (Failed) share one, the rest are neutral.
var cellStatuses = map[string]bool{"succeeded": true, "missed": true, "skipped": true, "cancelled": true, "running": true}

// cellClass is the colour class of a run's cell: "failed" for a failure,
// its status for one of cellStatuses, "other" otherwise.
func cellClass(status string, failed bool) string {
	switch {
	case failed:
		return "failed"
	case cellStatuses[status]:
		return status
	}
	return "other"
}

// cellTitle is a cell's tooltip: status, tick and duration.
func cellTitle(r RecentRun) string {
	return r.Status + " · " + formatTime(r.Tick) + " · " + formatSeconds(r.DurationSeconds)
}

// oldestFirst returns runs (newest first, as the API gives them) in the
// strip's order, left to right.
func oldestFirst(runs []RecentRun) []RecentRun {
	out := make([]RecentRun, len(runs))
	for i, r := range runs {
		out[len(runs)-1-i] = r
	}
	return out
}

// formatRate renders a success rate as a whole percentage, or none.
func formatRate(rate *float64) string {
	if rate == nil || math.IsNaN(*rate) {
		return none
	}
	return fmt.Sprintf("%d%%", int(math.Round(*rate*100)))
}

// formatNextIn renders the job's next tick in its own time zone when the
// source gave it (NextLocal), else in UTC, with how far away it is.
func formatNextIn(j Job, now time.Time) string {
	if j.NextLocal == "" || j.Next.IsZero() {
		return formatNext(j.Next, now)
	}
	d := j.Next.Sub(now).Seconds()
	if d < 1 {
		return j.NextLocal + " (due)"
	}
	return j.NextLocal + " (in " + formatSeconds(d) + ")"
}
