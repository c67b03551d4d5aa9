package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/lock"
)

// normalisers replace the values that differ from run to run (times,
// durations, tokens) in JSON output, keeping its layout.
var normalisers = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`("(?:acquired_at|expires_at|tick|start|end)": )"[^"]*"`), `$1"<time>"`},
	{regexp.MustCompile(`("(?:expires_in_seconds|duration_seconds)": )[-0-9.e]+`), `$1"<seconds>"`},
	{regexp.MustCompile(`("token": )\d+`), `$1"<token>"`},
}

func normalise(s string) string {
	for _, n := range normalisers {
		s = n.re.ReplaceAllString(s, n.repl)
	}
	return s
}

// TestOperatorCommands runs locks, status, trigger and unlock in-process
// against a real server, with golden JSON output.
func TestOperatorCommands(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	cfg := writeFile(t, t.TempDir(), "cronlock.yaml", fmt.Sprintf(`
nats: {url: %s}
lock: {lease: 20s, owner: golden}
http: {listen: ""}
log: {level: warn}
jobs:
  - name: ok.job
    schedule: "@yearly"
    shell: echo fine
  - name: fail.job
    schedule: "@yearly"
    command: ["sh", "-c", "exit 3"]
  - name: never.run
    schedule: "@yearly"
    shell: "true"
`, url))
	run := func(code int, args ...string) result {
		t.Helper()
		r := cronlock(t, nil, args...)
		if r.code != code {
			t.Fatalf("cronlock %q: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, r.code, code, r.stdout, r.stderr)
		}
		return r
	}

	if r := run(0, "locks", "-c", cfg, "--json"); r.stdout != "[]\n" {
		t.Errorf("locks --json with no lock = %q, want []", r.stdout)
	}
	if r := run(0, "locks", "-c", cfg); !strings.Contains(r.stdout, "no lock is held") {
		t.Errorf("locks with no lock = %q", r.stdout)
	}

	// Runs for the history: one success, one failure with its exit code.
	if r := run(0, "trigger", "-c", cfg, "--local", "ok.job"); !strings.Contains(r.stdout, "ok.job: succeeded") {
		t.Errorf("trigger ok.job: stdout %q", r.stdout)
	}
	if r := run(1, "trigger", "-c", cfg, "--local", "fail.job"); !strings.Contains(r.stderr, "status 3") {
		t.Errorf("trigger fail.job: stderr lacks the exit code:\n%s", r.stderr)
	}

	// A lock held by another process: trigger refuses to overlap it, and
	// locks shows it.
	_, js := natstest.Connect(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := lock.New(ctx, js, lock.Options{OwnerID: "other-replica", LeaseDuration: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	lease, err := l.Acquire(ctx, "ok.job")
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Close()
	if r := run(1, "trigger", "-c", cfg, "--local", "ok.job"); !strings.Contains(r.stderr, "running elsewhere") || !strings.Contains(r.stderr, "other-replica") {
		t.Errorf("trigger of a held job: stderr %q, want it to name the holder", r.stderr)
	}

	r := run(0, "locks", "-c", cfg, "--json")
	var locks []lockJSON
	if err := json.Unmarshal([]byte(r.stdout), &locks); err != nil {
		t.Fatalf("locks --json: %v\n%s", err, r.stdout)
	}
	if len(locks) != 1 || locks[0].Token != lease.Token() || locks[0].ExpiresInSeconds <= 0 || locks[0].ExpiresInSeconds > 20 ||
		locks[0].AcquiredAt.IsZero() || !locks[0].ExpiresAt.After(locks[0].AcquiredAt) {
		t.Errorf("locks --json = %+v, want ok.job held with token %d expiring within 20s", locks, lease.Token())
	}
	golden(t, "locks.json.golden", normalise(r.stdout))
	if r := run(0, "locks", "-c", cfg); !strings.Contains(r.stdout, "EXPIRES IN") || !strings.Contains(r.stdout, "other-replica") {
		t.Errorf("locks:\n%s", r.stdout)
	}

	r = run(0, "status", "-c", cfg, "--json")
	var status []statusJSON
	if err := json.Unmarshal([]byte(r.stdout), &status); err != nil {
		t.Fatalf("status --json: %v\n%s", err, r.stdout)
	}
	for _, s := range status {
		for _, run := range s.Runs {
			if run.Tick.IsZero() || run.Start.IsZero() || run.End.Before(run.Start) || run.Token == 0 {
				t.Errorf("status --json: %s: implausible run %+v", s.Job, run)
			}
		}
	}
	golden(t, "status.json.golden", normalise(r.stdout))
	if r := run(0, "status", "-c", cfg); !strings.Contains(r.stdout, "never run") || !strings.Contains(r.stdout, "(manual)") {
		t.Errorf("status:\n%s", r.stdout)
	}

	// unlock --force frees it; the holder loses its lease at its next renewal.
	if r := run(0, "unlock", "-c", cfg, "--force", "ok.job"); !strings.Contains(r.stdout, `released lock "ok.job" held by other-replica`) {
		t.Errorf("unlock: %q", r.stdout)
	}
	if r := run(1, "unlock", "-c", cfg, "--force", "ok.job"); !strings.Contains(r.stderr, "not held") {
		t.Errorf("unlock of a free lock: %q", r.stderr)
	}
	if r := run(0, "locks", "-c", cfg, "--json"); r.stdout != "[]\n" {
		t.Errorf("locks --json after unlock = %q", r.stdout)
	}
}
