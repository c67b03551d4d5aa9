package job

import (
	"context"
	"strings"
	"testing"
	"time"
)

func oneOffJob(at time.Time) Job {
	return Job{Name: "once", Calendar: &Calendar{At: at}, Run: func(context.Context) error { return nil }}
}

// TestOneOffNext checks a one-off's single tick: Next before it returns it,
// at or after it nothing, and the job past it is ended, not invalid.
func TestOneOffNext(t *testing.T) {
	t.Parallel()
	berlin := mustLoad(t, "Europe/Berlin")
	at := time.Date(2026, 12, 24, 18, 0, 0, 0, time.FixedZone("+01:00", 3600))
	j := oneOffJob(at)
	j.Location = berlin
	if err := j.Validate(); err != nil {
		t.Fatal(err)
	}
	s, err := j.ParsedSchedule()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		from time.Time
		want time.Time
	}{
		{time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), at},
		{at.Add(-time.Nanosecond), at},
		{at, time.Time{}},
		{at.Add(time.Second), time.Time{}},
	} {
		if got := s.Next(c.from); !got.Equal(c.want) {
			t.Errorf("Next(%v) = %v, want %v", c.from, got, c.want)
		}
	}
	if got := s.Next(time.Time{}); got.Location() != berlin {
		t.Errorf("tick in %v, want the job's location", got.Location())
	}
	if NeverFires(s) || ShortestInterval(s) != 0 {
		t.Errorf("NeverFires %v, ShortestInterval %v: want false, 0", NeverFires(s), ShortestInterval(s))
	}
	if got, want := j.Spec(), "at 2026-12-24T17:00:00Z"; got != want {
		t.Errorf("Spec() = %q, want %q", got, want)
	}
	if j.ScheduleKey() == oneOffJob(at.Add(time.Second)).ScheduleKey() || j.ScheduleKey() == "" {
		t.Errorf("ScheduleKey %q does not tell one-offs apart", j.ScheduleKey())
	}
	if j.Ended(at) || !j.Ended(at.Add(time.Second)) || !j.End().Equal(at) {
		t.Errorf("Ended at the tick %v, after it %v; End %v", j.Ended(at), j.Ended(at.Add(time.Second)), j.End())
	}
}

// TestOneOffErrors checks what a one-off refuses beside At.
func TestOneOffErrors(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 24, 17, 0, 0, 0, time.UTC)
	for want, change := range map[string]func(j *Job){
		"at: at, schedule and schedules are mutually exclusive":   func(j *Job) { j.Schedule = "@daily" },
		"at: at, schedule and schedules are mutually exclusive; ": func(j *Job) { j.Calendar.Schedules = []string{"@daily"} },
		"at: a one-off job takes no startAt, endAt or excludeDates": func(j *Job) {
			j.Calendar.ExcludeDates = []Date{{2026, 12, 24}}
		},
		"at: a one-off job takes no startAt":       func(j *Job) { j.Calendar.EndAt = at.Add(time.Hour) },
		"at: ticks fall on whole seconds, got":     func(j *Job) { j.Calendar.At = at.Add(time.Millisecond) },
		"at: 9999-01-01T00:00:00Z is outside the ": func(j *Job) { j.Calendar.At = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC) },
	} {
		j := oneOffJob(at)
		change(&j)
		if err := j.Validate(); err == nil || !strings.Contains(err.Error(), `job "once": `+want) {
			t.Errorf("got %v, want %q", err, want)
		}
	}
}
