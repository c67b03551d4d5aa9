package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/lock"
	"github.com/cronlock/cronlock/scheduler"
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

	r := run(0, "status", "-c", cfg, "--json")
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

	// ok.job running on another replica (its lock is its state record), and
	// a lock a library user took in the lock bucket: trigger refuses to
	// overlap the run, and locks shows both.
	_, js := natstest.Connect(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	held := holdJob(t, ctx, js, "other-replica", "ok.job")
	l, err := lock.New(ctx, js, lock.Options{OwnerID: "library-user", LeaseDuration: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	lease, err := l.Acquire(ctx, "zz.user-lock")
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Close()
	if r := run(1, "trigger", "-c", cfg, "--local", "ok.job"); !strings.Contains(r.stderr, "running elsewhere") || !strings.Contains(r.stderr, "other-replica") {
		t.Errorf("trigger of a held job: stderr %q, want it to name the holder", r.stderr)
	}

	r = run(0, "locks", "-c", cfg, "--json")
	var locks []lockJSON
	if err := json.Unmarshal([]byte(r.stdout), &locks); err != nil {
		t.Fatalf("locks --json: %v\n%s", err, r.stdout)
	}
	if len(locks) != 2 || locks[0].Key != "ok.job" || locks[0].Token != held.Token || locks[1].Token != lease.Token() {
		t.Fatalf("locks --json = %+v, want ok.job held with token %d and zz.user-lock with token %d", locks, held.Token, lease.Token())
	}
	for _, h := range locks {
		if h.ExpiresInSeconds <= 0 || h.ExpiresInSeconds > 20 || h.AcquiredAt.IsZero() || !h.ExpiresAt.After(h.AcquiredAt) {
			t.Errorf("locks --json: %+v, want it acquired and expiring within 20s", h)
		}
	}
	golden(t, "locks.json.golden", normalise(r.stdout))
	if r := run(0, "locks", "-c", cfg); !strings.Contains(r.stdout, "EXPIRES IN") || !strings.Contains(r.stdout, "other-replica") ||
		!strings.Contains(r.stdout, "library-user") {
		t.Errorf("locks:\n%s", r.stdout)
	}

	// unlock --force frees each; the job's run is cancelled, the library
	// user's lease ends.
	if r := run(0, "unlock", "-c", cfg, "--force", "ok.job"); !strings.Contains(r.stdout, `released lock "ok.job" held by other-replica`) {
		t.Errorf("unlock: %q", r.stdout)
	}
	if r := run(1, "unlock", "-c", cfg, "--force", "ok.job"); !strings.Contains(r.stderr, "not held") {
		t.Errorf("unlock of a free lock: %q", r.stderr)
	}
	if r := run(0, "unlock", "-c", cfg, "--force", "zz.user-lock"); !strings.Contains(r.stdout, `released lock "zz.user-lock" held by library-user`) {
		t.Errorf("unlock of the lock bucket's key: %q", r.stdout)
	}
	if r := run(0, "locks", "-c", cfg, "--json"); r.stdout != "[]\n" {
		t.Errorf("locks --json after unlock = %q", r.stdout)
	}
	select {
	case r := <-held.done:
		if r.Status != scheduler.StatusLost {
			t.Errorf("the unlocked run ended %s (%s), want %s", r.Status, r.Error, scheduler.StatusLost)
		}
	case <-ctx.Done():
		t.Fatal("the unlocked run did not end")
	}
}

// heldJob is a manual run holding a job's lock on a scheduler of the test.
type heldJob struct {
	Token uint64
	done  <-chan scheduler.Run // the finished run
}

// holdJob starts a manual run of the job called name on a scheduler of its
// own whose replica is owner, running until its lease is lost or the test
// ends, and returns once the run holds the job's lock (its state record).
func holdJob(t *testing.T, ctx context.Context, js jetstream.JetStream, owner, name string) heldJob {
	t.Helper()
	l, err := lock.New(ctx, js, lock.Options{OwnerID: owner, LeaseDuration: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	s, err := scheduler.New(ctx, js, l, scheduler.Options{ShutdownGrace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	block := func(ctx context.Context) error { <-ctx.Done(); return context.Cause(ctx) }
	if err := s.Add(job.Job{Name: name, Schedule: "@yearly", Run: block}); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = s.Run(runCtx) }() // its watch hears an unlock
	t.Cleanup(func() { stop(); <-stopped })
	started := make(chan scheduler.Run, 1)
	done := make(chan scheduler.Run, 1)
	go func() {
		r, _ := s.TriggerRun(runCtx, name, func(r scheduler.Run) { started <- r })
		done <- r
	}()
	select {
	case r := <-started:
		return heldJob{Token: r.Token, done: done}
	case r := <-done:
		t.Fatalf("the manual run of %s did not start: %+v", name, r)
	case <-ctx.Done():
		t.Fatalf("the manual run of %s did not start in time", name)
	}
	return heldJob{}
}
