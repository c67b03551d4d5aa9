package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
)

// cancelConfig is a replica whose job "long" starts every second and runs
// for a minute, writing its shell's PID to pids; "idle" never runs.
func cancelConfig(t *testing.T, dir, url, owner, pids string) string {
	t.Helper()
	return writeFile(t, dir, owner+".yaml", fmt.Sprintf(`
nats: {url: %s}
lock: {lease: 2s, renew: 500ms, owner: %s}
http: {listen: "127.0.0.1:0", admin_token: %s}
shutdown_grace: 2s
jobs:
  - name: long
    schedule: "* * * * * *"
    grace: 1s
    retries: 2
    shell: 'echo $$ >> %q; sleep 60'
  - name: idle
    schedule: "@yearly"
    shell: "true"
`, url, owner, runtimeToken, pids))
}

// cronlock cancel stops a running command on whichever of two replicas
// runs it, within a second of the request (its process is gone), records it
// cancelled by the operator without retrying it, and the job's next tick
// runs; a job that runs nothing is refused (exit 1, and 409 from the API).
// The API's cancel stops a run the same way.
func TestCancelCommandAndAPI(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	var bases []string
	for _, owner := range []string{"r1", "r2"} {
		d := startDaemon(t, dir, cancelConfig(t, dir, url, owner, pids))
		bases = append(bases, httpBase(t, d))
	}
	cfg := filepath.Join(dir, "r1.yaml")
	cli := func(code int, args ...string) result {
		t.Helper()
		r := cronlock(t, nil, append([]string{args[0], "-c", cfg}, args[1:]...)...)
		if r.code != code {
			t.Fatalf("cronlock %q: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, r.code, code, r.stdout, r.stderr)
		}
		return r
	}
	waitFor(t, 20*time.Second, "a run of long", func() bool { return len(fileLines(t, pids)) >= 1 })
	pid, _ := strconv.Atoi(fileLines(t, pids)[0])

	asked := time.Now()
	r := cli(0, "cancel", "long")
	gone := processGone(pid)
	if !strings.Contains(r.stdout, "ended cancelled") {
		t.Errorf("cancel: stdout %q, want the run ended cancelled", r.stdout)
	}
	if gone.IsZero() || gone.Sub(asked) > 2*time.Second {
		t.Errorf("the run's process %d was still there %v after the cancel", pid, time.Since(asked))
	}
	var cancelled map[string]any
	for _, run := range runsOf(t, statusOf(t, cli, "long")) {
		if run["status"] == "cancelled" {
			cancelled = run
		}
	}
	if cancelled == nil || !strings.HasSuffix(fmt.Sprint(cancelled["by"]), "(cronlock cancel)") || cancelled["attempts"] != float64(1) {
		t.Errorf("status after cancel: %v, want a cancelled run by <user>@<host> (cronlock cancel) after 1 attempt", cancelled)
	}
	waitFor(t, 10*time.Second, "the next tick's run", func() bool { return len(fileLines(t, pids)) >= 2 })

	if r := cli(1, "cancel", "idle"); !strings.Contains(r.stderr, "not running") {
		t.Errorf("cancel of a job that runs nothing: stderr %q", r.stderr)
	}
	if code, body, _ := request(t, "POST", bases[1]+"/api/jobs/idle/cancel", runtimeToken, "", nil); code != http.StatusConflict {
		t.Errorf("POST cancel of a job that runs nothing = %d %s, want 409", code, body)
	}
	if code, body, _ := request(t, "POST", bases[1]+"/api/jobs/long/cancel", "", "", nil); code != http.StatusForbidden {
		t.Errorf("POST cancel without the token = %d %s, want 403", code, body)
	}
	pid, _ = strconv.Atoi(fileLines(t, pids)[1])
	if code, body, _ := request(t, "POST", bases[1]+"/api/jobs/long/cancel", runtimeToken, "", nil); code != http.StatusOK {
		t.Fatalf("POST cancel = %d %s, want 200", code, body)
	}
	if gone := processGone(pid); gone.IsZero() {
		t.Errorf("the run's process %d survived the API's cancel", pid)
	}
}

// processGone waits up to 5 s for pid to exit and returns when it was
// seen gone (zero if it was not).
func processGone(pid int) time.Time {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
			return time.Now()
		}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && strings.Contains(string(b), ") Z ") {
			return time.Now() // a zombie: exited, not yet reaped
		}
	}
	return time.Time{}
}

// statusOf is `status --json JOB`.
func statusOf(t *testing.T, cli func(int, ...string) result, job string) map[string]any {
	t.Helper()
	r := cli(0, "status", "--json", job)
	var all []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &all); err != nil || len(all) != 1 {
		t.Fatalf("status --json %s: %v\n%s", job, err, r.stdout)
	}
	return all[0]
}
