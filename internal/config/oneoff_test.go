package config

import (
	"testing"
	"time"
)

func TestOneOffErrors(t *testing.T) {
	t.Parallel()
	const at = "    at: \"2026-12-24T18:00:00+01:00\"\n"
	tests := []struct {
		name, src string
		want      []want
	}{
		{"at and schedule", calendarJob(at + "    schedule: \"@daily\"\n"),
			[]want{{"4: jobs[0].at", "at, schedule and schedules are mutually exclusive; set only one"}}},
		{"schedules and at", calendarJob("    schedules: [\"@daily\"]\n" + at),
			[]want{{"5: jobs[0].at", "at, schedule and schedules are mutually exclusive"}}},
		{"bad at", calendarJob("    at: \"2026-12-24 18:00\"\n"),
			[]want{{"4: jobs[0].at", `"2026-12-24 18:00" is not an RFC 3339 time`}}},
		{"fractional at", calendarJob("    at: \"2026-12-24T18:00:00.5Z\"\n"),
			[]want{{"4: jobs[0].at", "ticks fall on whole seconds, got 2026-12-24T18:00:00.5Z"}}},
		{"at with end_at", calendarJob(at + "    end_at: \"2027-01-01T00:00:00Z\"\n"),
			[]want{{"5: jobs[0].end_at", "a one-off job (at) takes no start_at, end_at or exclude_dates"}}},
		{"at with exclude_dates", calendarJob(at + "    exclude_dates: [\"2026-12-24\"]\n"),
			[]want{{"5: jobs[0].exclude_dates", "a one-off job (at) takes no"}}},
		{"after_run delete", calendarJob(at + "    after_run: delete\n"),
			[]want{{"5: jobs[0].after_run", "delete is for runtime jobs; a file job keeps its definition"}}},
		{"after_run unknown", calendarJob(at + "    after_run: drop\n"),
			[]want{{"5: jobs[0].after_run", `unknown value "drop"; use keep`}}},
		{"after_run without at", calendarJob("    schedule: \"@daily\"\n    after_run: keep\n"),
			[]want{{"5: jobs[0].after_run", "is only valid together with at (a one-off job)"}}},
		{"neither", calendarJob("    timeout: 1s\n"), []want{{"2: jobs[0].schedule", "is required"}}},
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

// TestOneOffDecodes: at is resolved into Cal.At, after_run keep is
// accepted, and a one-off in the past is valid with no next tick.
func TestOneOffDecodes(t *testing.T) {
	t.Parallel()
	cfg, err := Parse("ok.yaml", []byte(calendarJob("    at: \"2026-12-24T18:00:00+01:00\"\n    after_run: keep\n"+
		"    timezone: Europe/Berlin\n")+"  - name: past\n    shell: \"true\"\n    at: \"2020-01-01T00:00:00Z\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	j := cfg.Jobs[0]
	want := time.Date(2026, 12, 24, 17, 0, 0, 0, time.UTC)
	if j.Cal == nil || !j.Cal.At.Equal(want) || j.AfterRun != AfterRunKeep {
		t.Fatalf("resolved: %+v, after_run %q", j.Cal, j.AfterRun)
	}
	if got := j.Timing().Spec(); got != "at 2026-12-24T17:00:00Z" {
		t.Errorf("Spec() = %q", got)
	}
	s, err := j.Timing().ParsedSchedule()
	if err != nil {
		t.Fatal(err)
	}
	if next := s.Next(want.Add(-time.Hour)); !next.Equal(want) {
		t.Errorf("next before the instant: %v, want %v", next, want)
	}
	if next := s.Next(want); !next.IsZero() {
		t.Errorf("next at the instant: %v, want none", next)
	}
	if past := cfg.Jobs[1]; !past.Timing().Ended(time.Now()) {
		t.Errorf("a past one-off is not ended")
	}
}
