package job

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Bounds of the calendar settings of a Job, checked by Validate: far above
// what a real job needs, low enough that Next stays cheap.
const (
	// MaxSchedules bounds Calendar.Schedules: Next asks every spec.
	MaxSchedules = 100
	// MaxExcludeDates bounds Calendar.ExcludeDates: about 27 years of days.
	MaxExcludeDates = 10_000
)

// Calendar is what a job's schedule says beyond one cron spec.
type Calendar struct {
	// Schedules, instead of Job.Schedule, is a list of cron specs (each as
	// Schedule): the job ticks at their union, once at an instant several
	// share. Exactly one of Job.Schedule and Schedules is set; at most
	// MaxSchedules specs.
	Schedules []string
	// ExcludeDates are days without ticks: wall-clock dates in the job's
	// Location (UTC if nil), whatever zone a CRON_TZ= prefix gives the
	// specs. At most MaxExcludeDates.
	ExcludeDates []Date
	// StartAt and EndAt, when not zero, bound the ticks: none before
	// StartAt or after EndAt (a tick at either instant is one). EndAt must
	// be after StartAt. A job past its EndAt is valid: it has no next tick.
	StartAt, EndAt time.Time
	// At, when not zero, makes the job a one-off: its only tick is At, a
	// whole second, instead of the ticks of Job.Schedule or Schedules
	// (both empty then); StartAt, EndAt and ExcludeDates must be zero.
	// Past At the job is valid and has no next tick, as past EndAt.
	At time.Time
}

// cal is j's Calendar, the zero one when it has none.
func (j Job) cal() Calendar {
	if j.Calendar == nil {
		return Calendar{}
	}
	return *j.Calendar
}

// unionSchedule ticks at every tick of any of its parts, once per instant.
type unionSchedule struct {
	parts []Schedule
}

// Next returns the earliest of the parts' next ticks; a tick that several
// parts share is one tick.
func (u unionSchedule) Next(t time.Time) time.Time {
	var first time.Time
	for _, p := range u.parts {
		if n := p.Next(t); !n.IsZero() && (first.IsZero() || n.Before(first)) {
			first = n
		}
	}
	return first
}

// excludeSchedule is base without the ticks that fall on its excluded days
// (wall-clock dates in loc).
type excludeSchedule struct {
	base     Schedule
	loc      *time.Location
	excluded map[int64]struct{} // day numbers, see Date.days
}

// Next skips an excluded day's ticks by asking base again from the end of
// that day, so a day costs one call however many ticks it has. Each
// iteration leaves a distinct excluded day behind, which bounds the loop.
func (e excludeSchedule) Next(t time.Time) time.Time {
	for range len(e.excluded) + 1 {
		n := e.base.Next(t)
		if n.IsZero() {
			return n
		}
		w := n.In(e.loc)
		y, m, d := w.Date()
		if _, skip := e.excluded[daysFromCivil(int64(y), int64(m), int64(d))]; !skip {
			return n
		}
		// The first instant of the next day; time.Date normalizes a
		// midnight that a DST gap removed to the instant after the gap.
		next := time.Date(y, m, d+1, 0, 0, 0, 0, e.loc)
		if !next.After(n) {
			next = n.Add(time.Second)
		}
		t = next.Add(-time.Nanosecond)
	}
	return time.Time{}
}

// windowSchedule is base limited to [start, end]; a zero bound is open.
type windowSchedule struct {
	base       Schedule
	start, end time.Time
}

// Next returns base's next tick at or after start (a tick exactly at start
// counts) and not after end; zero past end.
func (w windowSchedule) Next(t time.Time) time.Time {
	if !w.start.IsZero() && t.Before(w.start) {
		t = w.start.Add(-time.Nanosecond)
	}
	n := w.base.Next(t)
	if !w.end.IsZero() && n.After(w.end) {
		return time.Time{}
	}
	return n
}

// specs returns the cron specs of j: Schedules, or Schedule alone.
func (j Job) specs() []string {
	if len(j.cal().Schedules) > 0 {
		return j.cal().Schedules
	}
	return []string{j.Schedule}
}

// Spec returns the job's schedule for display: Schedule, the specs of
// Schedules joined with " | ", or "at 2026-12-24T17:00:00Z" (in UTC) for
// a one-off.
func (j Job) Spec() string {
	if !j.cal().At.IsZero() {
		return atSpec(j.cal().At)
	}
	if len(j.cal().Schedules) > 0 {
		return strings.Join(j.cal().Schedules, " | ")
	}
	return j.Schedule
}

// ScheduleKey returns a canonical text of everything but the location that
// decides j's ticks: two jobs with equal keys and locations have the same
// ticks, so they may share one parsed Schedule. For a job that sets only
// Schedule it is exactly Schedule.
func (j Job) ScheduleKey() string {
	if len(j.cal().Schedules) == 0 && len(j.cal().ExcludeDates) == 0 && j.cal().StartAt.IsZero() && j.cal().EndAt.IsZero() && j.cal().At.IsZero() {
		return j.Schedule
	}
	var b strings.Builder
	b.WriteString(j.Schedule)
	if !j.cal().At.IsZero() {
		b.WriteString("\x00")
		b.WriteString(atSpec(j.cal().At))
	}
	for _, s := range j.cal().Schedules {
		b.WriteString("\x00schedules=")
		b.WriteString(s)
	}
	for _, d := range j.cal().ExcludeDates {
		b.WriteString("\x00exclude=")
		b.WriteString(d.String())
	}
	for _, t := range []time.Time{j.cal().StartAt, j.cal().EndAt} {
		b.WriteString("\x00")
		if !t.IsZero() {
			b.WriteString(t.UTC().Format(time.RFC3339Nano))
		}
	}
	return b.String()
}

// ParsedSchedule parses the job's schedule in its location: the union of
// Schedules (or Schedule alone: then exactly ParseSchedule(j.Schedule,
// j.Location)), without the ticks on ExcludeDates (read in j.Location, UTC
// if nil) and outside [StartAt, EndAt]; for a one-off (Calendar.At), its
// single tick.
func (j Job) ParsedSchedule() (Schedule, error) {
	if !j.cal().At.IsZero() {
		return j.oneOff()
	}
	if j.Schedule != "" && len(j.cal().Schedules) > 0 {
		return nil, errors.New("schedules: schedule and schedules are mutually exclusive; set only one")
	}
	if len(j.cal().Schedules) > MaxSchedules {
		return nil, fmt.Errorf("schedules: at most %d specs, got %d", MaxSchedules, len(j.cal().Schedules))
	}
	var s Schedule
	if len(j.cal().Schedules) == 0 {
		p, err := ParseSchedule(j.Schedule, j.Location)
		if err != nil {
			return nil, err
		}
		s = p
	} else {
		u := unionSchedule{parts: make([]Schedule, len(j.cal().Schedules))}
		for i, spec := range j.cal().Schedules {
			p, err := ParseSchedule(spec, j.Location)
			if err != nil {
				return nil, fmt.Errorf("schedules[%d]: %w", i, err)
			}
			u.parts[i] = p
		}
		s = u
		if len(u.parts) == 1 {
			s = u.parts[0]
		}
	}
	return j.calendar(s)
}

// calendar wraps s, the parsed specs, in j's excluded dates and window.
func (j Job) calendar(s Schedule) (Schedule, error) {
	if len(j.cal().ExcludeDates) > MaxExcludeDates {
		return nil, fmt.Errorf("excludeDates: at most %d dates, got %d", MaxExcludeDates, len(j.cal().ExcludeDates))
	}
	if len(j.cal().ExcludeDates) > 0 {
		e := excludeSchedule{base: s, loc: j.Location, excluded: make(map[int64]struct{}, len(j.cal().ExcludeDates))}
		if e.loc == nil {
			e.loc = time.UTC
		}
		for i, d := range j.cal().ExcludeDates {
			if !d.Valid() {
				return nil, fmt.Errorf("excludeDates[%d]: %s is not an existing date of the years 1 to 9999", i, d)
			}
			e.excluded[d.days()] = struct{}{}
		}
		s = e
	}
	if j.cal().StartAt.IsZero() && j.cal().EndAt.IsZero() {
		return s, nil
	}
	if !j.cal().StartAt.IsZero() && !j.cal().EndAt.IsZero() && !j.cal().EndAt.After(j.cal().StartAt) {
		return nil, fmt.Errorf("endAt: must be after startAt (%s), got %s",
			j.cal().StartAt.Format(time.RFC3339), j.cal().EndAt.Format(time.RFC3339))
	}
	return windowSchedule{base: s, start: j.cal().StartAt, end: j.cal().EndAt}, nil
}

// Ended reports whether j's End is set and before now: the job has no
// more ticks.
func (j Job) Ended(now time.Time) bool {
	return !j.End().IsZero() && j.End().Before(now)
}

// End is the last instant j may tick at: its EndAt, or At for a one-off;
// zero when it has neither.
func (j Job) End() time.Time {
	if !j.cal().At.IsZero() {
		return j.cal().At
	}
	return j.cal().EndAt
}
