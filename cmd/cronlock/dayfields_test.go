package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
)

// TestNextDayFields: `cronlock next` and `validate` on jobs with Quartz's
// day forms, and validate's error for a bad one, with its line.
func TestNextDayFields(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := writeFile(t, dir, "cronlock.yaml", `
jobs:
  - name: last
    schedule: "0 9 L * *"
    shell: "true"
  - name: second-monday
    schedule: "0 9 ? * MON#2"
    timezone: Europe/Berlin
    shell: "true"
`)
	r := cronlock(t, nil, "next", "-c", cfg, "-n", "4", "--from", from, "last")
	want := "2026-03-31T09:00:00Z\n2026-04-30T09:00:00Z\n2026-05-31T09:00:00Z\n2026-06-30T09:00:00Z\n"
	if r.code != 0 || r.stdout != want {
		t.Errorf("next last: exit %d, stdout\n%s\nwant\n%s\nstderr %s", r.code, r.stdout, want, r.stderr)
	}
	r = cronlock(t, nil, "next", "-c", cfg, "-n", "2", "--from", from, "second-monday")
	want = "2026-04-13T09:00:00+02:00\n2026-05-11T09:00:00+02:00\n"
	if r.code != 0 || r.stdout != want {
		t.Errorf("next second-monday: exit %d, stdout\n%s\nwant\n%s\nstderr %s", r.code, r.stdout, want, r.stderr)
	}
	r = cronlock(t, nil, "validate", "-c", cfg)
	if r.code != 0 || !strings.Contains(r.stdout, "schedule: 0 9 L * * (UTC)") ||
		!strings.Contains(r.stdout, "schedule: 0 9 ? * MON#2 (Europe/Berlin)") {
		t.Errorf("validate: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}

	bad := writeFile(t, dir, "bad.yaml", "jobs:\n  - name: x\n    schedule: \"0 9 32W * *\"\n    shell: \"true\"\n")
	r = cronlock(t, nil, "validate", "-c", bad)
	if r.code != 2 || !strings.Contains(r.stderr, `bad.yaml:3: jobs[0].schedule: schedule "0 9 32W * *": day-of-month "32W": `) {
		t.Errorf("validate bad: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestDaemonOneOffRunsOnce: a job with `at` a few seconds ahead on two
// replicas sharing a NATS server runs once, at its instant, and `cronlock
// next` then shows it as ended.
func TestDaemonOneOffRunsOnce(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	dir := t.TempDir()
	out := filepath.Join(dir, "runs")
	at := time.Now().Add(4 * time.Second).Truncate(time.Second).UTC()
	var ds []*daemon
	var cfg string
	for _, owner := range []string{"o1", "o2"} {
		// starting_deadline: a replica slow to start still runs it, once.
		cfg = writeFile(t, dir, owner+".yaml", fmt.Sprintf(`
nats: {url: %s}
lock: {lease: 2s, renew: 500ms, owner: %s}
http: {listen: ""}
shutdown_grace: 2s
jobs:
  - name: once
    at: %q
    starting_deadline: 1m
    shell: 'echo "$CRONLOCK_TICK %s" >> %q'
`, url, owner, at.Format(time.RFC3339), owner, out))
		ds = append(ds, startDaemon(t, dir, cfg))
	}
	running(ds...)
	waitFor(t, 30*time.Second, "the one-off's run", func() bool { return len(fileLines(t, out)) > 0 })
	// Both replicas reached the tick (it is past, and they started before
	// it or caught it up); a second run would start now, not later.
	time.Sleep(2 * time.Second)
	stopAll(ds)
	lines := fileLines(t, out)
	if len(lines) != 1 || !strings.HasPrefix(lines[0], at.Format(time.RFC3339)+" ") {
		data, _ := os.ReadFile(out)
		t.Fatalf("runs:\n%s\nwant one, of tick %s", data, at.Format(time.RFC3339))
	}
	r := cronlock(t, nil, "next", "-c", cfg, "-n", "3")
	if want := "once  (ended " + at.Format(time.RFC3339) + ")\n"; r.code != 0 || r.stdout != want {
		t.Errorf("next: exit %d, stdout %q, want %q; stderr %s", r.code, r.stdout, want, r.stderr)
	}
}
