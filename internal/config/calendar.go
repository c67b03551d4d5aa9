package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/cronlock/cronlock/job"
)

// validateSchedule checks when a job runs (schedule or schedules,
// exclude_dates, start_at, end_at), resolves them into Cal, and
// returns the job's parsed schedule: nil when one of them has an error or
// the time zone is unknown.
func (d *decoder) validateSchedule(j *Job, p string) job.Schedule {
	if s, oneOff := d.validateOneOff(j, p); oneOff {
		return s
	}
	at := func(key string) string { return p + "." + key }
	c := &job.Calendar{Schedules: j.Schedules}
	ok := d.validateSpecs(j, p)
	ok = d.validateExcludeDates(j, p, c) && ok
	ok = d.validateWindow(j, p, c) && ok
	if len(c.Schedules) > 0 || len(c.ExcludeDates) > 0 || !c.StartAt.IsZero() || !c.EndAt.IsZero() {
		j.Cal = c
	}
	if !ok || j.Location == nil {
		return nil
	}
	jj := j.Timing()
	sched, err := d.jobSchedule(jj)
	field := at("schedule")
	if len(j.Schedules) > 0 {
		field = at("schedules")
	}
	if err != nil { // the parts were checked; this is a combination's error
		d.check(true, field, nil, "%v", err)
		return nil
	}
	if job.NeverFires(sched) {
		d.check(true, field, nil, "job %s: schedule %s never fires: no calendar date matches its day and month fields",
			quote(j.Name), quote(jj.Spec()))
		return nil
	}
	return sched
}

// validateSpecs checks that exactly one of schedule and schedules is
// written and that each spec parses; ok when they do.
func (d *decoder) validateSpecs(j *Job, p string) bool {
	at := func(key string) string { return p + "." + key }
	one, many := d.set[at("schedule")], d.set[at("schedules")]
	switch {
	case one && many:
		d.check(true, at("schedules"), []string{at("schedule")}, "schedule and schedules are mutually exclusive; set only one")
		return false
	case !one && !many:
		d.check(true, at("schedule"), nil, "is required")
		return false
	case one && strings.TrimSpace(j.Schedule) == "":
		d.check(true, at("schedule"), nil, "must not be empty")
		return false
	case many && len(j.Schedules) == 0:
		d.check(true, at("schedules"), nil, "must not be an empty list")
		return false
	case len(j.Schedules) > job.MaxSchedules:
		d.check(true, at("schedules"), nil, "at most %d specs, got %d", job.MaxSchedules, len(j.Schedules))
		return false
	}
	if j.Location == nil {
		return true // the unknown time zone is the error
	}
	ok := true
	specs, paths := []string{j.Schedule}, []string{at("schedule")}
	if many {
		specs, paths = j.Schedules, make([]string, len(j.Schedules))
		for i := range paths {
			paths[i] = fmt.Sprintf("%s[%d]", at("schedules"), i)
		}
	}
	for i, spec := range specs {
		if strings.TrimSpace(spec) == "" {
			d.check(true, paths[i], nil, "must not be empty")
			ok = false
		} else if _, err := d.schedule(spec, j.Location); err != nil {
			d.check(true, paths[i], nil, "%v", err)
			ok = false
		}
	}
	return ok
}

// validateExcludeDates parses exclude_dates into Excluded; ok when every
// date is valid.
func (d *decoder) validateExcludeDates(j *Job, p string, c *job.Calendar) bool {
	key := p + ".exclude_dates"
	if len(j.ExcludeDates) > job.MaxExcludeDates {
		d.check(true, key, nil, "at most %d dates, got %d", job.MaxExcludeDates, len(j.ExcludeDates))
		return false
	}
	ok := true
	for i, s := range j.ExcludeDates {
		date, err := job.ParseDate(s)
		if err != nil {
			d.check(true, fmt.Sprintf("%s[%d]", key, i), nil, "%v", err)
			ok = false
			continue
		}
		c.ExcludeDates = append(c.ExcludeDates, date)
	}
	return ok
}

// validateWindow parses start_at and end_at into c; ok when both parse
// (or are absent) and end_at is after start_at.
func (d *decoder) validateWindow(j *Job, p string, c *job.Calendar) bool {
	ok := true
	parse := func(key, value string) time.Time {
		if !d.set[p+"."+key] {
			return time.Time{}
		}
		t, err := time.Parse(time.RFC3339, value)
		if err != nil {
			d.check(true, p+"."+key, nil, "%s is not an RFC 3339 time; write e.g. \"2026-12-24T18:00:00+01:00\" or \"2026-12-24T17:00:00Z\"",
				quote(value))
			ok = false
		}
		return t
	}
	c.StartAt, c.EndAt = parse("start_at", j.StartAt), parse("end_at", j.EndAt)
	if ok && !c.StartAt.IsZero() && !c.EndAt.IsZero() && !c.EndAt.After(c.StartAt) {
		d.check(true, p+".end_at", []string{p + ".start_at"}, "must be after start_at (%s), got %s", j.StartAt, j.EndAt)
		ok = false
	}
	return ok
}

// jobSchedule is j.ParsedSchedule, parsed once per file for each
// job.Job.ScheduleKey and location. For a job that sets only schedule it
// is schedule(j.Schedule, j.Location).
func (d *decoder) jobSchedule(j job.Job) (job.Schedule, error) {
	k := scheduleKey{j.ScheduleKey(), j.Location}
	if s, ok := d.schedules[k]; ok {
		return s, nil
	}
	s, err := j.ParsedSchedule()
	if err != nil {
		return nil, err
	}
	if d.schedules == nil {
		d.schedules = map[scheduleKey]job.Schedule{}
	}
	d.schedules[k] = s
	return s, nil
}

// Timing returns the job's timing settings as a job.Job (no Run, no
// name): its ParsedSchedule is the job's schedule, and its ScheduleKey and
// Spec are the job's.
func (j Job) Timing() job.Job {
	return job.Job{Schedule: j.Schedule, Calendar: j.Cal, Location: j.Location}
}
