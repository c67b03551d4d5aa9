package app_test

import (
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/app"
	"github.com/cronlock/cronlock/internal/config"
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
