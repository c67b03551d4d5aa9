package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/cronlock/cronlock/internal/natstest"
)

// reservePort returns a loopback port that was free a moment ago; nothing
// listens on it until the test starts NATS there.
func reservePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// httpBase waits for the daemon's "HTTP server listening" line and returns
// the server's base URL.
func httpBase(t *testing.T, d *daemon) string {
	t.Helper()
	d.waitOutput("HTTP server listening", 30*time.Second)
	m := regexp.MustCompile(`"addr":"([^"]+)"`).FindStringSubmatch(d.out.String())
	if m == nil {
		t.Fatalf("no HTTP address in the log:\n%s", d.out)
	}
	return "http://" + m[1]
}

// fetch returns the status code and body of GET url (code 0 on error).
func fetch(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// lateNATSConfig is a config with a job every second appending to out,
// against NATS at port (not listening yet).
func lateNATSConfig(port int, out string) string {
	return fmt.Sprintf(`
nats: {url: "nats://127.0.0.1:%d"}
lock: {lease: 2s, renew: 500ms}
http: {listen: "127.0.0.1:0"}
jobs:
  - name: late
    schedule: "* * * * * *"
    shell: echo ran >> %q
`, port, out)
}

// TestStartBeforeNATS is issue 9: cronlock starts 8 s before NATS. It
// keeps retrying (warning at most every few seconds), /healthz is 200 the
// whole time, /readyz 503 with the stage until jobs can run, and the job
// runs within 3 s of NATS being up.
func TestStartBeforeNATS(t *testing.T) {
	t.Parallel()
	port := reservePort(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "runs")
	cfg := writeFile(t, dir, "cronlock.yaml", lateNATSConfig(port, out))
	started := time.Now()
	d := startDaemon(t, dir, cfg)
	// Stop the daemon before the server that the cleanup stops after it: a
	// run that ends while NATS is gone keeps its replica trying to record
	// it for shutdown_grace (30 s), which is the contract, not a hang.
	defer d.stop()
	base := httpBase(t, d)
	waitFor(t, 10*time.Second, "/healthz 200", func() bool { code, _ := fetch(base + "/healthz"); return code == 200 })

	// /healthz is polled until the job has run; every answer must be 200.
	var mu sync.Mutex
	var healthFailures []string
	stopPolling := make(chan struct{})
	var poller sync.WaitGroup
	poller.Go(func() {
		for {
			select {
			case <-stopPolling:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if code, body := fetch(base + "/healthz"); code != 200 {
				mu.Lock()
				healthFailures = append(healthFailures, fmt.Sprintf("%s: %d %s", time.Since(started), code, body))
				mu.Unlock()
			}
		}
	})
	stopHealth := sync.OnceFunc(func() { close(stopPolling); poller.Wait() })
	defer stopHealth()

	wantStage := fmt.Sprintf("not ready: connecting to nats://127.0.0.1:%d", port)
	if code, body := fetch(base + "/readyz"); code != 503 || !strings.HasPrefix(body, wantStage) {
		t.Errorf("/readyz before NATS = %d %q, want 503 %q...", code, body, wantStage)
	}
	time.Sleep(time.Until(started.Add(8 * time.Second))) // the scenario: NATS 8 s after cronlock
	if !d.alive() {
		t.Fatalf("cronlock run exited while NATS was not up: %v", d.waitErr)
	}
	natstest.RunServer(t, natstest.Options{Configure: func(o *server.Options) { o.Port = port }})
	up := time.Now()
	waitFor(t, 10*time.Second, "the job's first run", func() bool { return len(fileLines(t, out)) > 0 })
	if took := time.Since(up); took > 3*time.Second {
		t.Errorf("the job first ran %v after NATS was up, want within 3s", took)
	}
	waitFor(t, 10*time.Second, "/readyz 200", func() bool { code, _ := fetch(base + "/readyz"); return code == 200 })

	stopHealth()
	if len(healthFailures) > 0 {
		t.Errorf("/healthz failed while waiting for NATS: %q", healthFailures)
	}
	warns := strings.Count(d.out.String(), "cannot connect to NATS; retrying")
	if warns == 0 || warns > 4 {
		t.Errorf("%d warnings about the failed connection in 8 s, want 1 to 4 (throttled):\n%s", warns, d.out)
	}
}

// TestSIGTERMWhileWaitingForNATS: a daemon waiting for NATS exits 0 within
// a second of SIGTERM.
func TestSIGTERMWhileWaitingForNATS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := writeFile(t, dir, "cronlock.yaml", lateNATSConfig(reservePort(t), filepath.Join(dir, "runs")))
	d := startDaemon(t, dir, cfg)
	d.waitOutput("cannot connect to NATS; retrying", 30*time.Second)
	sent := time.Now()
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(5 * time.Second):
		t.Fatal("no exit within 5s of SIGTERM")
	}
	limit := time.Second
	if raceEnabled {
		limit += time.Second // a race-enabled binary sleeps 1 s at exit (GORACE atexit_sleep_ms)
	}
	if took := time.Since(sent); took > limit {
		t.Errorf("exit %v after SIGTERM, want within %v", took, limit)
	}
	if d.waitErr != nil {
		t.Errorf("exit: %v, want status 0", d.waitErr)
	}
}

// TestOperatorCommandsFailFastWithoutNATS: only `run` waits for NATS; the
// operator commands exit 1 at once, naming the URL.
func TestOperatorCommandsFailFastWithoutNATS(t *testing.T) {
	t.Parallel()
	port := reservePort(t)
	dir := t.TempDir()
	cfg := writeFile(t, dir, "cronlock.yaml", lateNATSConfig(port, filepath.Join(dir, "runs")))
	for _, args := range [][]string{{"status"}, {"locks"}, {"trigger", "late"}, {"unlock", "--force", "late"},
		{"suspend", "late"}, {"resume", "late"}, {"replicas"}} {
		cmd := exec.Command(binary(t), append([]string{args[0], "-c", cfg}, args[1:]...)...)
		cmd.Dir = dir
		start := time.Now()
		outb, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Errorf("cronlock %q: %v, want exit status 1\n%s", args, err, outb)
		}
		if took := time.Since(start); took > 15*time.Second {
			t.Errorf("cronlock %q took %v to fail", args, took)
		}
		if want := fmt.Sprintf("nats://127.0.0.1:%d", port); !strings.Contains(string(outb), want) {
			t.Errorf("cronlock %q: output does not name %s:\n%s", args, want, outb)
		}
	}
}
