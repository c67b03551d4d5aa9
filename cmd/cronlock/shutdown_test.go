package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
)

// TestGracefulShutdown: SIGTERM lets the running job finish (within
// shutdown_grace) while /healthz stays up and /readyz fails; a second
// SIGTERM is only logged; the process exits 0.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	dir := t.TempDir()
	out := filepath.Join(dir, "runs")
	cfg := writeFile(t, dir, "cronlock.yaml", fmt.Sprintf(`
nats: {url: %s}
lock: {lease: 2s, renew: 500ms}
http: {listen: "127.0.0.1:0"}
shutdown_grace: 20s
jobs:
  - name: slow
    schedule: "* * * * * *"
    shell: echo start >> %[2]q; sleep 2; echo end >> %[2]q
`, url, out))
	d := startDaemon(t, dir, cfg)
	d.waitOutput("HTTP server listening", 30*time.Second)
	m := regexp.MustCompile(`"addr":"([^"]+)"`).FindStringSubmatch(d.out.String())
	if m == nil {
		t.Fatalf("no HTTP address in the log:\n%s", d.out)
	}
	base := "http://" + m[1]
	status := func(path string) int {
		resp, err := http.Get(base + path)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	waitFor(t, 10*time.Second, "/readyz 200", func() bool { return status("/readyz") == 200 })
	waitFor(t, 10*time.Second, "a run starts", func() bool { return len(fileLines(t, out)) > 0 })

	d.cmd.Process.Signal(syscall.SIGTERM)
	d.waitOutput("shutting down", 5*time.Second)
	waitFor(t, 5*time.Second, "/readyz 503 while draining", func() bool { return status("/readyz") == 503 })
	if code := status("/healthz"); code != 200 || !d.alive() {
		t.Errorf("/healthz = %d while draining, want 200", code)
	}
	if l := fileLines(t, out); l[len(l)-1] != "start" {
		t.Fatalf("the run ended before the checks (lines %q): the test cannot tell a drain from a quick exit", l)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	d.waitOutput("already shutting down", 5*time.Second)

	select {
	case <-d.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("no exit within 30s of SIGTERM")
	}
	if d.waitErr != nil {
		t.Errorf("exit: %v", d.waitErr)
	}
	l := fileLines(t, out)
	if l[len(l)-1] != "end" {
		t.Errorf("the running job did not finish: lines %q", l)
	}
	if s := d.out.String(); !strings.Contains(s, `"status":"succeeded"`) || !strings.Contains(s, `"message":"stopped"`) {
		t.Errorf("log lacks the run's success or the final stop:\n%s", s)
	}
}
