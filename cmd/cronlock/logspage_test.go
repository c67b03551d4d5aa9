package main

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/internal/webtest"
)

// logsPageWait bounds each wait for the page (the machine may be loaded).
const logsPageWait = 15 * time.Second

// The page's job view shows a running run's output as it is produced,
// from GET /api/jobs/{name}/output, which needs the read token like every
// GET; when the run ends the view says so.
func TestLogsOnThePage(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{Width: 1280, Height: 800})
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	dir := t.TempDir()
	gate := filepath.Join(dir, "go")
	const readTok = "read-token-for-the-page"
	cfg := writeFile(t, dir, "c.yaml", fmt.Sprintf(`
nats: {url: %s}
http: {listen: "127.0.0.1:0", read_token: %s}
shutdown_grace: 1s
lock: {lease: 2s, renew: 500ms, owner: replica-p}
jobs:
  - name: lines
    schedule: "@yearly"
    env: {GATE: %q}
    shell: 'while [ ! -e "$GATE" ]; do sleep 0.02; done; for i in 1 2 3 4 5 6 7 8 9 10; do echo "page <b>line</b> $i"; sleep 0.2; done'
`, url, readTok, gate))
	d := startDaemon(t, dir, cfg)
	running(d)
	base := httpBase(t, d)
	if resp, err := http.Get(base + "/api/jobs/lines/output"); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET /api/jobs/lines/output without the read token: %v %v, want 401", resp.Status, err)
	}
	req, _ := http.NewRequest("GET", base+"/api/jobs/lines/output", nil)
	req.Header.Set("Authorization", "Bearer "+readTok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET /api/jobs/lines/output with the read token: %v %v, want 200 text/event-stream", resp, err)
	}
	if line, _ := bufio.NewReader(resp.Body).ReadString('\n'); line != ": following\n" {
		t.Errorf("the stream opens with %q, want a comment", line)
	}
	resp.Body.Close()
	req, _ = http.NewRequest("GET", base+"/api/jobs/nope/output", nil)
	req.Header.Set("Authorization", "Bearer "+readTok)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /api/jobs/nope/output: %v %v, want 404", resp, err)
	} else {
		resp.Body.Close()
	}

	b.Navigate(base + "/jobs/lines")
	b.WaitCount("#login-token", 1, logsPageWait)
	b.Type("#login-token", readTok)
	b.Click("#login-submit")
	b.WaitText("#updated", "live · updated", logsPageWait)
	if r := cronlock(t, nil, "trigger", "--no-wait", "-c", cfg, "lines"); r.code != 0 {
		t.Fatalf("trigger: exit %d\n%s", r.code, r.stderr)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	b.WaitText("#live-output", "page <b>line</b> 3", logsPageWait)
	if s, _ := b.Text("#live-run"); !strings.Contains(s, "on replica-p") || !strings.Contains(s, "running") {
		t.Errorf("live output label %q: want the run on replica-p, running", s)
	}
	if s, _ := b.Text("#live-output"); strings.Contains(s, "line</b> 10") {
		t.Errorf("line 10 shown with line 3: not live")
	}
	if n := b.Count("#live-output b"); n != 0 {
		t.Errorf("the job's output became %d elements: it must be shown as text", n)
	}
	b.WaitText("#live-run", "ended (exit 0)", logsPageWait)
	if s := webtest.Eval[string](b, `document.getElementById("live-output").textContent`); !strings.Contains(s, "page <b>line</b> 1\n") || !strings.HasSuffix(s, "page <b>line</b> 10\n") {
		t.Errorf("live output %q: want lines 1 to 10", s)
	}
	for _, p := range b.Problems() {
		if !strings.Contains(p, "401") { // the page before the login
			t.Errorf("the page reported: %s", p)
		}
	}
	// An open stream does not hold up the shutdown.
	stopping := time.Now()
	d.stop()
	if took := time.Since(stopping); took > 4*time.Second {
		t.Errorf("cronlock run took %v to stop with the page's stream open", took)
	}
}
