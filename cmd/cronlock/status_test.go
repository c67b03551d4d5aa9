package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestStatusOfJobs: `status JOB...` shows only those jobs, in the order
// given, in the table and in --json; an unknown JOB is a usage error (exit
// 2) naming it, found before NATS is asked; a flag after a JOB is one too.
func TestStatusOfJobs(t *testing.T) {
	t.Parallel()
	e := newOpsEnv(t, `
  - name: alpha
    schedule: "@yearly"
    shell: echo alpha
  - name: beta
    schedule: "@yearly"
    shell: echo beta
  - name: gamma
    schedule: "@yearly"
    shell: echo gamma
`)
	e.run(0, "trigger", "--local", "beta")

	text := e.run(0, "status", "gamma", "beta").stdout
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "gamma ") || !strings.Contains(lines[1], "never run") ||
		!strings.HasPrefix(lines[2], "beta ") || !strings.Contains(lines[2], "succeeded") {
		t.Errorf("status gamma beta: want the header, gamma (never run), beta (succeeded):\n%s", text)
	}
	var all []statusJSON
	out := e.run(0, "status", "--json", "beta", "beta").stdout
	if err := json.Unmarshal([]byte(out), &all); err != nil {
		t.Fatalf("status --json beta: %v\n%s", err, out)
	}
	if len(all) != 1 || all[0].Job != "beta" || len(all[0].Runs) != 1 {
		t.Errorf("status --json beta beta: want beta once, with its run:\n%s", out)
	}

	r := e.run(2, "status", "beta", "nope")
	if !strings.Contains(r.stderr, `job "nope"`) || r.stdout != "" {
		t.Errorf("status beta nope: stderr %q, stdout %q; want the unknown job named, nothing printed", r.stderr, r.stdout)
	}
	r = e.run(2, "status", "beta", "--json")
	if !strings.Contains(r.stderr, "flag --json after an argument") {
		t.Errorf("status beta --json: stderr %q, want the misplaced flag named", r.stderr)
	}
}

// An unknown JOB is reported without connecting: nothing listens at nats.url.
func TestStatusUnknownJobWithoutNATS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := writeFile(t, dir, "cronlock.yaml", fmt.Sprintf(`
nats: {url: "nats://127.0.0.1:%d"}
jobs:
  - name: alpha
    schedule: "@yearly"
    shell: echo alpha
`, reservePort(t)))
	r := cronlock(t, nil, "status", "-c", cfg, "nope")
	if r.code != 2 || !strings.Contains(r.stderr, `job "nope"`) {
		t.Errorf("status nope without NATS: exit %d, stderr %q; want 2 naming the job", r.code, r.stderr)
	}
}
