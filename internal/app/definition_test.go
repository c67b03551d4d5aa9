package app_test

import (
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/app"
	"github.com/cronlock/cronlock/internal/config"
	"github.com/cronlock/cronlock/job"
)

// The definition hash covers what runs and when, and nothing else.
func TestDefinitionHash(t *testing.T) {
	t.Parallel()
	base := func() config.Job {
		return config.Job{Name: "report", Schedule: "0 * * * *", Command: []string{"report", "--all"},
			Env: map[string]string{"A": "1", "B": "2"}, Dir: "/srv", Timeout: config.Duration(time.Minute)}
	}
	h := app.DefinitionHash(base())
	if len(h) != 16 {
		t.Fatalf("hash %q: want 16 hex digits", h)
	}
	same := map[string]func(*config.Job){
		"env in another order": func(j *config.Job) { j.Env = map[string]string{"B": "2", "A": "1"} },
		"retries":              func(j *config.Job) { j.Retries = 3 },
		"jitter":               func(j *config.Job) { j.Jitter = config.Duration(time.Second) },
		"notify":               func(j *config.Job) { j.Notify = []config.NotifyTarget{{Command: []string{"true"}}} },
		"suspended":            func(j *config.Job) { j.Suspended = true },
		"grace":                func(j *config.Job) { j.Grace = config.Duration(time.Second) },
		"line":                 func(j *config.Job) { j.Line = 99 },
	}
	differ := map[string]func(*config.Job){
		"command":  func(j *config.Job) { j.Command = []string{"report", "--some"} },
		"argv cut": func(j *config.Job) { j.Command = []string{"report --all"} },
		"shell":    func(j *config.Job) { j.Command, j.Shell = nil, "report --all" },
		"env":      func(j *config.Job) { j.Env = map[string]string{"A": "1", "B": "3"} },
		"dir":      func(j *config.Job) { j.Dir = "/tmp" },
		"schedule": func(j *config.Job) { j.Schedule = "5 * * * *" },
		"timezone": func(j *config.Job) { j.Timezone = "Europe/Berlin" },
		"timeout":  func(j *config.Job) { j.Timeout = config.Duration(time.Hour) },
		"schedules": func(j *config.Job) {
			j.Schedule, j.Schedules = "", []string{"0 * * * *"}
			j.Cal = &job.Calendar{Schedules: j.Schedules}
		},
		"exclude_dates": func(j *config.Job) {
			j.ExcludeDates, j.Cal = []string{"2026-12-25"}, &job.Calendar{ExcludeDates: []job.Date{{Year: 2026, Month: 12, Day: 25}}}
		},
		"start_at": func(j *config.Job) {
			j.StartAt, j.Cal = "2026-01-01T00:00:00Z", &job.Calendar{StartAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		},
		"end_at": func(j *config.Job) {
			j.EndAt, j.Cal = "2026-01-01T00:00:00Z", &job.Calendar{EndAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		},
		"at": func(j *config.Job) {
			j.Schedule, j.At = "", "2026-12-24T18:00:00+01:00"
			j.Cal = &job.Calendar{At: time.Date(2026, 12, 24, 17, 0, 0, 0, time.UTC)}
		},
	}
	for name, change := range same {
		j := base()
		change(&j)
		if got := app.DefinitionHash(j); got != h {
			t.Errorf("%s changed the hash (%s, was %s)", name, got, h)
		}
	}
	for name, change := range differ {
		j := base()
		change(&j)
		if got := app.DefinitionHash(j); got == h {
			t.Errorf("%s left the hash as it was (%s)", name, h)
		}
	}
}

// TestDefinitionHashUnchanged pins the hashes of jobs without the calendar
// keys to the values of the release before them (computed on main): a
// rolling update must not see a definition conflict.
func TestDefinitionHashUnchanged(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		job  config.Job
		want string
	}{
		{config.Job{Name: "a", Schedule: "*/5 * * * *", Timezone: "Europe/Berlin", Command: []string{"echo", "hi"},
			Env: map[string]string{"A": "1"}, Dir: "/tmp", Timeout: config.Duration(30 * time.Second)}, "d6ee41de012ad3ec"},
		{config.Job{Name: "b", Schedule: "@hourly", Shell: "true"}, "2443cacfaee58203"},
	} {
		if got := app.DefinitionHash(c.job); got != c.want {
			t.Errorf("%s: hash %s, want %s as before the calendar keys", c.job.Name, got, c.want)
		}
	}
}
