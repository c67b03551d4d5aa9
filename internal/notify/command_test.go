//go:build linux

package notify

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/config"
	"github.com/cronlock/cronlock/scheduler"
)

// alive reports whether process pid exists and is not a zombie (a
// container's init may not reap orphans).
func alive(pid int) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !errors.Is(err, os.ErrNotExist) && runtime.GOOS != "linux"
	}
	// pid (comm) state ...: comm may hold spaces, so look after the last ')'.
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(fields) == 0 || fields[0] != "Z"
}

func TestCommandGetsJSONOnStdin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "payload.json")
	env := filepath.Join(dir, "env")
	f := newFixture(t, Options{}, config.NotifyTarget{
		Command: []string{"sh", "-c", `cat > "$1"; echo "$CRONLOCK_EVENT $CRONLOCK_JOB" > "$2"`, "sh", out, env},
		On:      []string{EventRecovered, EventSuccess},
	})
	f.Notify(testRun(scheduler.StatusSucceeded), scheduler.StatusTimeout)
	f.close(t)
	f.wantCounters(t, 1, 0)

	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var p Payload
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatalf("stdin %q: %v", data, err)
	}
	// One notification for the run: the more specific recovered event.
	if p.Event != EventRecovered || p.Job != "backup" || p.Status != string(scheduler.StatusSucceeded) || p.Owner != "host-a:123" {
		t.Errorf("payload = %+v", p)
	}
	if e, _ := os.ReadFile(env); strings.TrimSpace(string(e)) != "recovered backup" {
		t.Errorf("CRONLOCK_EVENT CRONLOCK_JOB = %q", e)
	}
}

func TestCommandFailureIsRetried(t *testing.T) {
	t.Parallel()
	count := filepath.Join(t.TempDir(), "count")
	// Fails on the first two attempts, succeeds on the third.
	script := `n=$(cat "$1" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$1"; [ $n -ge 3 ] || { echo "attempt $n broke" >&2; exit 7; }`
	f := newFixture(t, Options{}, config.NotifyTarget{Command: []string{"sh", "-c", script, "sh", count}})
	f.Notify(testRun(scheduler.StatusFailed), "")
	f.close(t)
	if n, _ := os.ReadFile(count); strings.TrimSpace(string(n)) != "3" {
		t.Errorf("command ran %q times, want 3", n)
	}
	f.wantCounters(t, 1, 0)
	if log := f.log.String(); !strings.Contains(log, "exit status 7") || !strings.Contains(log, "attempt 1 broke") {
		t.Errorf("log does not show the exit status and output:\n%s", log)
	}
}

func TestCommandGivesUp(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{Retries: -1}, config.NotifyTarget{Command: []string{"sh", "-c", "exit 1"}})
	f.Notify(testRun(scheduler.StatusFailed), "")
	f.close(t)
	f.wantCounters(t, 0, 1)
}

func TestMissingProgramIsNotRetried(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, config.NotifyTarget{Command: []string{filepath.Join(t.TempDir(), "no-such-program")}})
	f.Notify(testRun(scheduler.StatusFailed), "")
	f.close(t)
	f.wantCounters(t, 0, 1)
	if strings.Contains(f.log.String(), "retrying") {
		t.Errorf("a missing program was retried:\n%s", f.log)
	}
}

// TestCommandTimeoutKillsProcessGroup checks that a command that outlives
// Timeout is killed together with the children it started.
func TestCommandTimeoutKillsProcessGroup(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	f := newFixture(t, Options{Timeout: 300 * time.Millisecond, Retries: -1}, config.NotifyTarget{
		Command: []string{"sh", "-c", `sleep 60 & echo $! > "$1"; wait`, "sh", pidFile},
	})
	f.Notify(testRun(scheduler.StatusFailed), "")
	f.close(t)
	f.wantCounters(t, 0, 1)
	if !strings.Contains(f.log.String(), "timed out after 300ms") {
		t.Errorf("log does not report the timeout:\n%s", f.log)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	// The orphaned sleep dies at once; poll in case the kill is slow to land.
	deadline := time.Now().Add(closeTimeout)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("child %d of the timed-out command still runs", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
