package job

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Job is one scheduled unit of work.
//
// Every replica runs the same set of Jobs; for each tick of Schedule the
// replica that wins the lock named Name calls Run. The zero value is not a
// valid Job; call Validate before scheduling one.
type Job struct {
	// Name identifies the job. It must be unique, and it is used verbatim as
	// the lock key, so it must satisfy ValidateName.
	Name string
	// Schedule is a cron spec: 5 fields, or 6 with leading seconds
	// ("0 */5 * * * *"), descriptors (@hourly, @daily, @every 90s, ...), with
	// an optional CRON_TZ=/TZ= prefix. See ParseSchedule.
	Schedule string
	// Location is the zone in which Schedule's fields are read; nil means
	// UTC. A CRON_TZ=/TZ= prefix in Schedule overrides it.
	Location *time.Location
	// Run does the work. Its context carries a RunInfo (see FromContext)
	// and is cancelled when the attempt must stop, e.g. when Timeout
	// expires.
	Run func(ctx context.Context) error
	// Timeout bounds each attempt; 0 means none.
	Timeout time.Duration
	// Retries is the number of extra attempts within the same tick, made
	// while still holding the lock, after Run returns an error.
	Retries int
	// RetryBackoff is the pause before each retry.
	RetryBackoff time.Duration
	// StartingDeadline is the catch-up window: a tick that no replica ran
	// (all were down) is still run if it is at most this old; 0 means no
	// catch-up.
	StartingDeadline time.Duration
}

// ParsedSchedule parses the job's schedule in its location:
// ParseSchedule(j.Schedule, j.Location).
func (j Job) ParsedSchedule() (Schedule, error) {
	return ParseSchedule(j.Schedule, j.Location)
}

// Validate reports every problem with j, joined (errors.Join), or nil. Each
// error names the job and the field, e.g. `job "x": schedule "61 * * * *":
// ...` or `job "x": timeout: must not be negative, got -1s`; a bad name is
// reported by ValidateName's error, which names it.
func (j Job) Validate() error {
	var errs []error
	add := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("job %s: "+format, append([]any{quote(j.Name)}, args...)...))
	}
	if err := ValidateName(j.Name); err != nil {
		errs = append(errs, err)
	}
	if s, err := j.ParsedSchedule(); err != nil {
		add("%w", err)
	} else if NeverFires(s) {
		add("schedule %s never fires: no calendar date matches its day and month fields", quote(j.Schedule))
	}
	if j.Run == nil {
		add("run: must not be nil")
	}
	for _, d := range []struct {
		field string
		value time.Duration
	}{
		{"timeout", j.Timeout},
		{"retryBackoff", j.RetryBackoff},
		{"startingDeadline", j.StartingDeadline},
	} {
		if d.value < 0 {
			add("%s: must not be negative, got %v", d.field, d.value)
		}
	}
	if j.Retries < 0 {
		add("retries: must not be negative, got %d", j.Retries)
	}
	return errors.Join(errs...)
}
