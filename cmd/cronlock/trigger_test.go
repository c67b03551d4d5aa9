package main

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/cronlock/cronlock/internal/testlog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/scheduler"
)

// triggerJobs are the jobs of the trigger tests; only.a is suspended by
// replica-b's configuration, so that only replica-a may take it.
const triggerJobs = `
  - name: ok
    schedule: "@yearly"
    shell: echo "ran by $CRONLOCK_OWNER"
  - name: boom
    schedule: "@yearly"
    shell: echo boom; exit 3
  - name: slow
    schedule: "@yearly"
    shell: sleep 3; echo slept
  - name: long
    schedule: "@yearly"
    shell: sleep 60
  - name: only.a
    schedule: "@yearly"
    shell: echo "$CRONLOCK_OWNER"
    suspended: %t
`

// triggerConfig is a configuration with owner and triggerJobs.
func triggerConfig(url, owner string, suspendOnlyA bool) string {
	return fmt.Sprintf(`
nats: {url: %s}
lock: {lease: 2s, renew: 500ms, owner: %s}
http: {listen: ""}
log: {level: info}
shutdown_grace: 1s
jobs:`, url, owner) + fmt.Sprintf(triggerJobs, suspendOnlyA)
}

// binResult is one run of the built binary.
type binResult struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

// quickExit is the environment of a CLI process: a race-enabled build
// would otherwise sleep a second at exit.
var quickExit = append(os.Environ(), "GORACE=atexit_sleep_ms=0")

// runBinary runs the built cronlock with args and waits for it.
func runBinary(t *testing.T, args ...string) binResult {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Env = quickExit
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := binResult{stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return r
}

// wantExit fails the test unless r exited with code.
func wantExit(t *testing.T, r binResult, code int, what string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", what, r.code, code, r.stdout, r.stderr)
	}
}

// TestTriggerOnReplicas: `cronlock trigger` has one of two running
// replicas run the job: the history records a replica as its owner, not
// the CLI; a failed run exits 1 with its output; --no-wait returns while
// the run goes on, and a second trigger meanwhile is refused as running
// elsewhere; a replica whose configuration suspends a job never takes it;
// --local runs the job in the CLI's process; and a CLI waiting for a run
// whose replica is killed gives up once the lock has expired.
func TestTriggerOnReplicas(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	dir := t.TempDir()
	a := startDaemon(t, dir, writeFile(t, dir, "a.yaml", triggerConfig(url, "replica-a", false)))
	b := startDaemon(t, dir, writeFile(t, dir, "b.yaml", triggerConfig(url, "replica-b", true)))
	cli := writeFile(t, dir, "cli.yaml", triggerConfig(url, "operator", false))
	running(a, b)
	replicas := []string{"replica-a", "replica-b"}

	r := runBinary(t, "trigger", "-c", cli, "ok")
	wantExit(t, r, 0, "trigger ok")
	runs := historyOf(t, url, "ok")
	if len(runs) != 1 || !runs[0].Manual || !slices.Contains(replicas, runs[0].Owner) || runs[0].Status != scheduler.StatusSucceeded {
		t.Fatalf("history of ok after trigger = %+v, want one manual run succeeded on a replica", runs)
	}
	for _, want := range []string{fmt.Sprintf("ok: run %d started on %s", runs[0].ID, runs[0].Owner),
		"ok: succeeded in", outputIndent + "ran by " + runs[0].Owner} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("trigger ok: stdout lacks %q:\n%s", want, r.stdout)
		}
	}

	r = runBinary(t, "trigger", "-c", cli, "boom")
	wantExit(t, r, 1, "trigger boom")
	if !strings.Contains(r.stdout, "boom: failed") || !strings.Contains(r.stdout, "exit code 3") || !strings.Contains(r.stdout, outputIndent+"boom") {
		t.Errorf("trigger boom: stdout lacks the failure, exit code and output:\n%s", r.stdout)
	}

	r = runBinary(t, "trigger", "-c", cli, "--no-wait", "slow")
	wantExit(t, r, 0, "trigger --no-wait slow")
	if runs := historyOf(t, url, "slow"); len(runs) != 1 || runs[0].Status != scheduler.StatusRunning {
		t.Errorf("after trigger --no-wait (%v) the history of slow = %+v, want it running", r.took, runs)
	}
	r = runBinary(t, "trigger", "-c", cli, "slow")
	wantExit(t, r, 1, "trigger slow while it runs")
	if !strings.Contains(r.stderr, "is running elsewhere") {
		t.Errorf("trigger slow while it runs: stderr %q", r.stderr)
	}

	for range 3 {
		r = runBinary(t, "trigger", "-c", cli, "only.a")
		wantExit(t, r, 0, "trigger only.a")
		if !strings.Contains(r.stdout, "started on replica-a") {
			t.Errorf("trigger only.a ran on another replica than the one that does not suspend it:\n%s", r.stdout)
		}
	}

	r = runBinary(t, "trigger", "-c", cli, "--local", "ok")
	wantExit(t, r, 0, "trigger --local ok")
	if runs := historyOf(t, url, "ok"); len(runs) != 2 || runs[0].Owner != "operator" {
		t.Errorf("history of ok after trigger --local = %+v, want the newest run by the CLI (owner operator)", runs)
	}

	waitForReplicaDeath(t, cli, url, map[string]*daemon{"replica-a": a, "replica-b": b})
}

// waitForReplicaDeath starts a trigger of the long job, kills the replica
// that runs it, and checks that the waiting CLI exits 1 once the lock has
// expired (lease 2 s) and the result grace passed, not later.
func waitForReplicaDeath(t *testing.T, cli, url string, byOwner map[string]*daemon) {
	t.Helper()
	cmd := exec.Command(binary(t), "trigger", "-c", cli, "long")
	cmd.Env = quickExit
	var stdout, stderr testlog.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, "the long run to start", func() bool { return strings.Contains(stdout.String(), "started on") })
	runs := historyOf(t, url, "long")
	if len(runs) != 1 || byOwner[runs[0].Owner] == nil {
		t.Fatalf("history of long = %+v, want a run on a replica", runs)
	}
	byOwner[runs[0].Owner].kill()
	killed := time.Now()
	err := cmd.Wait()
	took := time.Since(killed)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "stopped without recording a result") {
		t.Errorf("trigger long, its replica killed: %v, want exit 1 saying the replica stopped\nstderr:\n%s", err, stderr.String())
	}
	if took > 20*time.Second {
		t.Errorf("trigger long gave up %v after its replica was killed, want within lease + grace", took)
	}
	t.Logf("trigger gave up %v after the replica running the job was killed (lease 2s)", took.Round(100*time.Millisecond))
}

// TestTriggerNoReplica: with no replica running, trigger exits 3 within
// --timeout; one whose embedded server does not answer exits 3 at once.
func TestTriggerNoReplica(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	dir := t.TempDir()
	cli := writeFile(t, dir, "cli.yaml", triggerConfig(url, "operator", false))
	r := runBinary(t, "trigger", "-c", cli, "--timeout", "1s", "ok")
	wantExit(t, r, 3, "trigger with no replica")
	if !strings.Contains(r.stderr, "no replica took the trigger request within 1s") {
		t.Errorf("trigger with no replica: stderr %q", r.stderr)
	}
	if r.took > 10*time.Second {
		t.Errorf("trigger --timeout 1s with no replica took %v", r.took)
	}

	embedded := writeFile(t, dir, "embedded.yaml", fmt.Sprintf(`
nats: {embedded: {store_dir: %q, listen: "127.0.0.1:%d"}}
jobs:
  - name: ok
    schedule: "@yearly"
    shell: "true"
`, filepath.Join(dir, "store"), reservePort(t)))
	r = runBinary(t, "trigger", "-c", embedded, "ok")
	wantExit(t, r, 3, "trigger with an embedded server that does not answer")
	if !strings.Contains(r.stderr, "no 'cronlock run' answers at nats.embedded.listen") {
		t.Errorf("trigger, embedded server down: stderr %q", r.stderr)
	}
}
