package job

import (
	"errors"
	"fmt"
	"time"
)

// atSchedule is a one-off job's schedule (Calendar.At): a single tick.
type atSchedule struct {
	at time.Time // in the job's location
}

// Next returns the tick if it is after t, else the zero time: past its
// instant a one-off has no next tick. Unlike a cron spec's, the tick is
// returned however far ahead it is, since finding it costs nothing.
func (a atSchedule) Next(t time.Time) time.Time {
	if t.Before(a.at) {
		return a.at
	}
	return time.Time{}
}

// oneOff returns the schedule of a job with Calendar.At set, or an error
// naming the field that conflicts with it.
func (j Job) oneOff() (Schedule, error) {
	c := j.cal()
	switch {
	case j.Schedule != "" || len(c.Schedules) > 0:
		return nil, errors.New("at: at, schedule and schedules are mutually exclusive; set only one")
	case len(c.ExcludeDates) > 0 || !c.StartAt.IsZero() || !c.EndAt.IsZero():
		return nil, errors.New("at: a one-off job takes no startAt, endAt or excludeDates; its one tick is at")
	case c.At.Nanosecond() != 0:
		return nil, fmt.Errorf("at: ticks fall on whole seconds, got %s", c.At.Format(time.RFC3339Nano))
	case c.At.Unix() < minUnix || c.At.Unix() >= maxUnix:
		return nil, fmt.Errorf("at: %s is outside the years 1 to 9989", c.At.Format(time.RFC3339))
	}
	loc := j.Location
	if loc == nil {
		loc = time.UTC
	}
	return atSchedule{at: c.At.In(loc)}, nil
}

// OneOff reports whether j is a one-off job (Calendar.At set): it has one
// tick, and until that tick has run it has no history, so the scheduler
// catches it up under StartingDeadline even though it looks new.
func (j Job) OneOff() bool { return !j.cal().At.IsZero() }

// atSpec is the display and key text of a one-off's tick.
func atSpec(at time.Time) string {
	return "at " + at.UTC().Format(time.RFC3339)
}
