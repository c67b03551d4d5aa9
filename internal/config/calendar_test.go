package config

import (
	"testing"
	"time"

	"github.com/cronlock/cronlock/job"
)

// calendarJob is a job whose lines 3.. are extra, after name and shell.
func calendarJob(extra string) string {
	return "jobs:\n  - name: a\n    shell: \"true\"\n" + extra
}

func TestCalendarErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src string
		want      []want
	}{
		{"schedule and schedules", calendarJob("    schedule: \"@hourly\"\n    schedules: [\"@daily\"]\n"),
			[]want{{"5: jobs[0].schedules", "schedule and schedules are mutually exclusive"}}},
		{"empty schedules", calendarJob("    schedules: []\n"), []want{{"4: jobs[0].schedules", "must not be an empty list"}}},
		{"bad spec in schedules", calendarJob("    schedules:\n      - \"@daily\"\n      - \"61 * * * *\"\n"),
			[]want{{"6: jobs[0].schedules[1]", `schedule "61 * * * *"`}}},
		{"empty spec in schedules", calendarJob("    schedules: [\"@daily\", \" \"]\n"),
			[]want{{"4: jobs[0].schedules[1]", "must not be empty"}}},
		{"schedules never fire", calendarJob("    schedules: [\"0 0 30 2 *\", \"0 0 31 4 *\"]\n"),
			[]want{{"4: jobs[0].schedules", `schedule "0 0 30 2 * | 0 0 31 4 *" never fires`}}},
		{"bad date", calendarJob("    schedule: \"@daily\"\n    exclude_dates:\n      - \"2026-12-25\"\n      - \"2026-02-29\"\n"),
			[]want{{"7: jobs[0].exclude_dates[1]", `date "2026-02-29": want an existing date as YYYY-MM-DD`}}},
		{"date not a string", calendarJob("    schedule: \"@daily\"\n    exclude_dates: [2026-12-25x, 7]\n"),
			[]want{{"5: jobs[0].exclude_dates[1]", "expected a string"}, {"5: jobs[0].exclude_dates[0]", "want an existing date"}}},
		{"bad start_at", calendarJob("    schedule: \"@daily\"\n    start_at: \"2026-12-24 18:00\"\n"),
			[]want{{"5: jobs[0].start_at", `"2026-12-24 18:00" is not an RFC 3339 time`}}},
		{"bad end_at", calendarJob("    schedule: \"@daily\"\n    end_at: \"2026-12-24\"\n"),
			[]want{{"5: jobs[0].end_at", `"2026-12-24" is not an RFC 3339 time`}}},
		{"end before start", calendarJob("    schedule: \"@daily\"\n    start_at: \"2026-12-24T18:00:00+01:00\"\n    end_at: \"2026-12-24T17:00:00Z\"\n"),
			[]want{{"6: jobs[0].end_at", "must be after start_at (2026-12-24T18:00:00+01:00), got 2026-12-24T17:00:00Z"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse("bad.yaml", []byte(tt.src))
			if cfg != nil || err == nil {
				t.Fatalf("Parse succeeded, want errors %v", tt.want)
			}
			checkErrors(t, err, tt.want)
		})
	}
}

// TestCalendarDecodes: the keys are resolved into Excluded, Start and End,
// and a job that has ended (end_at in the past) is valid.
func TestCalendarDecodes(t *testing.T) {
	t.Parallel()
	cfg, err := Parse("ok.yaml", []byte(calendarJob("    schedules: [\"0 9 * * 1-5\", \"0 9 * * 1\"]\n"+
		"    timezone: Europe/Berlin\n    exclude_dates: [\"2020-12-25\"]\n"+
		"    start_at: \"2020-01-01T00:00:00Z\"\n    end_at: \"2021-01-01T00:00:00+01:00\"\n")))
	if err != nil {
		t.Fatal(err)
	}
	j := cfg.Jobs[0]
	if c := j.Cal; c == nil || len(c.ExcludeDates) != 1 || c.ExcludeDates[0] != (job.Date{Year: 2020, Month: 12, Day: 25}) ||
		!c.StartAt.Equal(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)) || !c.EndAt.Equal(time.Date(2020, 12, 31, 23, 0, 0, 0, time.UTC)) {
		t.Errorf("resolved: %+v", c)
	}
	if got := j.Timing().Spec(); got != "0 9 * * 1-5 | 0 9 * * 1" {
		t.Errorf("Spec() = %q", got)
	}
	s, err := j.Timing().ParsedSchedule()
	if err != nil {
		t.Fatal(err)
	}
	if next := s.Next(time.Date(2020, 12, 24, 12, 0, 0, 0, time.UTC)); !next.Equal(time.Date(2020, 12, 28, 8, 0, 0, 0, time.UTC)) {
		t.Errorf("next after Christmas Eve: %v, want Monday 2020-12-28 09:00 in Berlin", next)
	}
	if next := s.Next(time.Now()); !next.IsZero() {
		t.Errorf("an ended job has a next tick: %v", next)
	}
}
