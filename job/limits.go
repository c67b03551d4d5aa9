package job

import (
	"fmt"
	"time"
)

// Upper bounds on a Job's settings, checked by Validate. Each is far above
// what a real job needs, and low enough that a typo or an overflowing value
// (retries: 9223372036854775807, timeout: 2562047h) is an error instead of
// a job that never runs or never stops.
const (
	// MaxRetries: a hundred attempts at one tick is already a loop; more
	// is a mistake (and 1+Retries must not overflow).
	MaxRetries = 100
	// MaxTimeout: a week for one attempt.
	MaxTimeout = 7 * 24 * time.Hour
	// MaxRetryBackoff: a day between attempts.
	MaxRetryBackoff = 24 * time.Hour
	// MaxStartingDeadline: a monthly job's whole interval (31 days) may be
	// caught up after an outage.
	MaxStartingDeadline = 31 * 24 * time.Hour
	// MaxJitter: a day. The jitter must also be shorter than the job's
	// shortest interval between ticks, or a tick's run would start after
	// the next tick.
	MaxJitter = 24 * time.Hour
	// MaxEvery bounds "@every D": a leap year.
	MaxEvery = 366 * 24 * time.Hour
)

// gapSamples is how many consecutive ticks ShortestInterval looks at: from a
// fixed instant, so that the answer does not depend on when it is asked.
// 128 ticks cover every pattern of a schedule's fields within an hour, a
// day or a week (a tick costs about 0.25 µs: 30 µs a job).
const gapSamples = 128

// gapFrom is the instant ShortestInterval starts from.
var gapFrom = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// ShortestInterval returns the shortest time between two consecutive ticks
// of s: the period of "@every D", else the shortest gap among gapSamples
// consecutive ticks. 0 when s has fewer than two ticks there.
func ShortestInterval(s Schedule) time.Duration {
	if e, ok := s.(everySchedule); ok {
		return time.Duration(e.period) * time.Second
	}
	var shortest time.Duration
	prev := s.Next(gapFrom)
	for i := 1; i < gapSamples && !prev.IsZero(); i++ {
		next := s.Next(prev)
		if next.IsZero() {
			break
		}
		if gap := next.Sub(prev); shortest == 0 || gap < shortest {
			shortest = gap
		}
		prev = next
	}
	return shortest
}

// boundsErrors reports the settings of j above their bounds; s is j's
// parsed schedule, nil when it does not parse.
func (j Job) boundsErrors(s Schedule) []string {
	var errs []string
	for _, d := range []struct {
		field      string
		value, max time.Duration
	}{
		{"timeout", j.Timeout, MaxTimeout},
		{"retryBackoff", j.RetryBackoff, MaxRetryBackoff},
		{"startingDeadline", j.StartingDeadline, MaxStartingDeadline},
		{"jitter", j.Jitter, MaxJitter},
	} {
		if d.value > d.max {
			errs = append(errs, fmt.Sprintf("%s: must be at most %v, got %v", d.field, d.max, d.value))
		}
	}
	if j.Retries > MaxRetries {
		errs = append(errs, fmt.Sprintf("retries: must be at most %d, got %d", MaxRetries, j.Retries))
	}
	// Ticks fall on whole seconds, so a jitter under a second always fits.
	if s != nil && j.Jitter >= time.Second && j.Jitter <= MaxJitter {
		if gap := ShortestInterval(s); gap > 0 && j.Jitter >= gap {
			errs = append(errs, fmt.Sprintf("jitter: must be shorter than the schedule's shortest interval between ticks (%v), got %v", gap, j.Jitter))
		}
	}
	return errs
}
