package job

import (
	"math"
	"strings"
	"testing"
	"time"
)

// TestValidateBounds: settings above their bounds are errors naming the
// field; the bounds themselves are accepted.
func TestValidateBounds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mutate func(*Job)
		want   string // "" for valid
	}{
		{func(j *Job) { j.Retries = math.MaxInt }, `job "reports.daily": retries: must be at most 100, got 9223372036854775807`},
		{func(j *Job) { j.Retries = MaxRetries }, ""},
		{func(j *Job) { j.Timeout = 2562047 * time.Hour }, `timeout: must be at most 168h0m0s, got 2562047h0m0s`},
		{func(j *Job) { j.Timeout = MaxTimeout }, ""},
		{func(j *Job) { j.RetryBackoff = MaxRetryBackoff + time.Second }, `retryBackoff: must be at most 24h0m0s`},
		{func(j *Job) { j.StartingDeadline = MaxStartingDeadline + time.Second }, `startingDeadline: must be at most 744h0m0s`},
		{func(j *Job) { j.StartingDeadline = MaxStartingDeadline }, ""},
		{func(j *Job) { j.Jitter = MaxJitter + time.Second }, `jitter: must be at most 24h0m0s`},
		// Daily in UTC: 24 h.
		{func(j *Job) { j.Jitter = 24 * time.Hour }, `jitter: must be shorter than the schedule's shortest interval between ticks (24h0m0s), got 24h0m0s`},
		{func(j *Job) { j.Jitter = 23*time.Hour + 59*time.Minute }, ""},
		{func(j *Job) { j.Schedule = "*/15 * * * *"; j.Jitter = 15 * time.Minute }, `shortest interval between ticks (15m0s)`},
		{func(j *Job) { j.Schedule = "*/15 * * * *"; j.Jitter = 14 * time.Minute }, ""},
		// Uneven gaps: 00:00 and 00:10 each day, so the shortest is 10 min.
		{func(j *Job) { j.Schedule = "0,10 0 * * *"; j.Jitter = 11 * time.Minute }, `shortest interval between ticks (10m0s)`},
		{func(j *Job) { j.Schedule = "@every 90s"; j.Jitter = 90 * time.Second }, `shortest interval between ticks (1m30s)`},
		{func(j *Job) { j.Schedule = "@every 90s"; j.Jitter = 89 * time.Second }, ""},
		{func(j *Job) { j.Schedule = "@every 2562047h" }, `@every: duration 2562047h is longer than 8784h0m0s (MaxEvery)`},
		{func(j *Job) { j.Schedule = "@every 8784h" }, ""},
	} {
		j := validJob()
		tc.mutate(&j)
		err := j.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: Validate() = %v, want nil", j, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: Validate() = %v, want an error containing %q", j, err, tc.want)
		}
	}
}

// TestShortestInterval: in a zone with DST a daily job's shortest interval
// is the 23 h day.
func TestShortestInterval(t *testing.T) {
	t.Parallel()
	s, err := ParseSchedule("0 4 * * *", mustLoad(t, "America/New_York"))
	if err != nil {
		t.Fatal(err)
	}
	// 128 daily ticks from January reach the March change.
	if got := ShortestInterval(s); got != 23*time.Hour {
		t.Errorf("ShortestInterval = %v, want 23h", got)
	}
}
