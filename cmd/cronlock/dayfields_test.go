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

// TestDaemonOneOffRunsOnce: on two replicas sharing a NATS server, a job
// with `at` a few seconds ahead runs once, at its instant, and one whose
// instant passed just before the replicas started runs once too, caught
// up under its starting_deadline; `cronlock next` then shows both as
// ended.
func TestDaemonOneOffRunsOnce(t *testing.T) {
	t.Parallel()
	bin := binary(t) // built before the instants are chosen
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	dir := t.TempDir()
	now := time.Now().Truncate(time.Second).UTC()
	ats := map[string]time.Time{"soon": now.Add(3 * time.Second), "late": now.Add(-time.Second)}
	outs := map[string]string{"soon": filepath.Join(dir, "soon.runs"), "late": filepath.Join(dir, "late.runs")}
	var ds []*daemon
	var cfg string
	for _, owner := range []string{"o1", "o2"} {
		cfg = writeFile(t, dir, owner+".yaml", fmt.Sprintf(`
nats: {url: %s}
lock: {lease: 2s, renew: 500ms, owner: %s}
http: {listen: ""}
shutdown_grace: 2s
jobs:
  - name: soon
    at: %q
    starting_deadline: 1m # a replica slow to start still runs it, once
    shell: 'echo "$CRONLOCK_TICK %s" >> %q'
  - name: late
    at: %q
    starting_deadline: 1m
    shell: 'echo "$CRONLOCK_TICK %s" >> %q'
`, url, owner, ats["soon"].Format(time.RFC3339), owner, outs["soon"], ats["late"].Format(time.RFC3339), owner, outs["late"]))
		ds = append(ds, startDaemonOf(t, bin, dir, cfg))
	}
	running(ds...)
	waitFor(t, 30*time.Second, "both one-offs' runs", func() bool {
		return len(fileLines(t, outs["soon"])) > 0 && len(fileLines(t, outs["late"])) > 0
	})
	// Both replicas have reached both ticks (past, and each replica either
	// started before it or caught it up at start-up): a second run would
	// have started by now.
	time.Sleep(2 * time.Second)
	stopAll(ds)
	for name, out := range outs {
		if lines := fileLines(t, out); len(lines) != 1 || !strings.HasPrefix(lines[0], ats[name].Format(time.RFC3339)+" ") {
			data, _ := os.ReadFile(out)
			t.Errorf("%s runs:\n%s\nwant one, of tick %s", name, data, ats[name].Format(time.RFC3339))
		}
	}
	r := cronlock(t, nil, "next", "-c", cfg, "-n", "3")
	want := "soon  (ended " + ats["soon"].Format(time.RFC3339) + ")\nlate  (ended " + ats["late"].Format(time.RFC3339) + ")\n"
	if r.code != 0 || r.stdout != want {
		t.Errorf("next: exit %d, stdout %q, want %q; stderr %s", r.code, r.stdout, want, r.stderr)
	}
}
