package config

import (
	"strings"
	"time"

	"github.com/cronlock/cronlock/job"
)

// Values of Job.AfterRun.
const (
	// AfterRunKeep keeps a one-off's definition after its run (the only
	// value a file job may have, and a file job's default).
	AfterRunKeep = "keep"
	// AfterRunDelete deletes a one-off's definition after its run; only
	// runtime jobs can.
	AfterRunDelete = "delete"
)

// validateOneOff checks at and after_run. handled reports whether the job
// is a one-off (at is written): then s is its schedule, nil on an error,
// and validateSchedule has nothing else to check.
func (d *decoder) validateOneOff(j *Job, p string) (s job.Schedule, handled bool) {
	key := func(k string) string { return p + "." + k }
	if !d.set[key("at")] {
		d.check(d.set[key("after_run")], key("after_run"), nil, "is only valid together with at (a one-off job)")
		return nil, false
	}
	ok := d.checkAfterRun(j, key("after_run"))
	for _, k := range []string{"schedule", "schedules"} {
		if d.set[key(k)] {
			d.check(true, key("at"), []string{key(k)}, "at, schedule and schedules are mutually exclusive; set only one")
			ok = false
		}
	}
	for _, k := range []string{"start_at", "end_at", "exclude_dates"} {
		if d.set[key(k)] {
			d.check(true, key(k), nil, "a one-off job (at) takes no start_at, end_at or exclude_dates; its one run is at at")
			ok = false
		}
	}
	at, err := time.Parse(time.RFC3339, j.At)
	if err != nil {
		d.check(true, key("at"), nil, "%s is not an RFC 3339 time; write e.g. \"2026-12-24T18:00:00+01:00\" or \"2026-12-24T17:00:00Z\"",
			quote(j.At))
		return nil, true
	}
	j.Cal = &job.Calendar{At: at}
	if !ok || j.Location == nil {
		return nil, true
	}
	sched, err := d.jobSchedule(j.Timing())
	if err != nil {
		d.check(true, key("at"), nil, "%s", strings.TrimPrefix(err.Error(), "at: "))
		return nil, true
	}
	return sched, true
}

// checkAfterRun checks a one-off's after_run: for a file job absent or
// keep; a runtime definition may also delete, its default.
func (d *decoder) checkAfterRun(j *Job, key string) bool {
	switch {
	case d.runtime && j.AfterRun == "":
		j.AfterRun = AfterRunDelete
		return true
	case d.runtime && (j.AfterRun == AfterRunKeep || j.AfterRun == AfterRunDelete):
		return true
	case d.runtime:
		d.check(true, key, nil, "unknown value %s; use keep or delete", quote(j.AfterRun))
		return false
	}
	switch j.AfterRun {
	case "", AfterRunKeep:
		return true
	case AfterRunDelete:
		d.check(true, key, nil, "delete is for runtime jobs; a file job keeps its definition")
	default:
		d.check(true, key, nil, "unknown value %s; use keep", quote(j.AfterRun))
	}
	return false
}
