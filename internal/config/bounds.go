package config

import (
	"time"

	"github.com/cronlock/cronlock/job"
)

// Upper bounds of settings that the job package does not own. They equal
// the library's (scheduler.MaxShutdownGrace, scheduler.MaxConcurrentRunsLimit,
// lock.MaxLeaseDuration; internal/app's tests check it) so that the file is
// refused with a line before the library would refuse it.
const (
	MaxShutdownGrace       = Duration(24 * time.Hour)
	MaxConcurrentRunsLimit = 1_000_000
	MaxLease               = Duration(time.Hour)
	// MaxJobGrace bounds jobs[].grace, the time between SIGTERM and
	// SIGKILL: an hour for a job to clean up.
	MaxJobGrace = Duration(time.Hour)
)

// validateBounds checks the top-level and lock settings against their
// upper bounds.
func (d *decoder) validateBounds(c *Config) {
	d.check(c.ShutdownGrace > MaxShutdownGrace, "shutdown_grace", nil, "must be at most %s, got %s", MaxShutdownGrace, c.ShutdownGrace)
	d.check(c.MaxConcurrentRuns > MaxConcurrentRunsLimit, "max_concurrent_runs", nil,
		"must be at most %d (0: no limit), got %d", MaxConcurrentRunsLimit, c.MaxConcurrentRuns)
	d.check(c.Lock.Lease > MaxLease, "lock.lease", nil,
		"must be at most %s (a crashed replica's lock is free after the lease), got %s", MaxLease, c.Lock.Lease)
}

// validateJobBounds checks a job's settings against job's bounds (the
// schedule's own, @every, are ParseSchedule's). s is the parsed schedule,
// nil when it has an error.
func (d *decoder) validateJobBounds(j *Job, p string, s job.Schedule) {
	at := func(key string) string { return p + "." + key }
	d.check(j.Retries > job.MaxRetries, at("retries"), nil, "must be at most %d, got %d", job.MaxRetries, j.Retries)
	for _, b := range []struct {
		key        string
		value, max Duration
	}{
		{"timeout", j.Timeout, Duration(job.MaxTimeout)},
		{"retry_backoff", j.RetryBackoff, Duration(job.MaxRetryBackoff)},
		{"starting_deadline", j.StartingDeadline, Duration(job.MaxStartingDeadline)},
		{"jitter", j.Jitter, Duration(job.MaxJitter)},
		{"grace", j.Grace, MaxJobGrace},
	} {
		d.check(b.value > b.max, at(b.key), nil, "must be at most %s, got %s", b.max, b.value)
	}
	if s == nil || j.Jitter < Duration(time.Second) || j.Jitter > Duration(job.MaxJitter) {
		return
	}
	if gap := job.ShortestInterval(s); gap > 0 && j.Jitter.Duration() >= gap {
		d.check(true, at("jitter"), []string{at("schedule")},
			"must be shorter than the schedule's shortest interval between ticks (%s), got %s", gap, j.Jitter)
	}
}
