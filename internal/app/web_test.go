package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/cronlock/cronlock/internal/testlog"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/internal/web"
	"github.com/cronlock/cronlock/internal/webtest"
	"github.com/cronlock/cronlock/scheduler"
)

// webToken is the daemons' http.admin_token in these tests.
const webToken = "e2e-admin-token-0123456789"

// xssPayload is what the "evil" job prints: markup that would run script if
// the page ever treated output as HTML.
const xssPayload = `<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">`

// liveBound is the bound for a new run to show without a reload.
const liveBound = 2 * time.Second

// pageWait bounds waits for what should be on a page quickly; generous for
// a loaded machine.
const pageWait = 15 * time.Second

// webConfig is a daemon of the end-to-end tests: "tick" runs every second,
// "report", "evil", "slow" and "flaky" (which fails, in Berlin's zone) only
// when triggered (their schedule fires once a year).
const webConfig = `
nats: {url: %s}
lock: {lease: 4s, renew: 1s, owner: %s}
http: {listen: "127.0.0.1:0", admin_token: %s}
shutdown_grace: 5s
config_watch: false
jobs:
  - name: tick
    schedule: "* * * * * *"
    shell: "echo tick"
  - name: report
    schedule: "0 0 1 1 *"
    shell: "echo report done"
  - name: evil
    schedule: "0 0 1 1 *"
    command: ["printf", "%%s\\n", %s]
  - name: slow
    schedule: "0 0 1 1 *"
    shell: "sleep 3"
  - name: flaky
    schedule: "0 0 1 1 *"
    timezone: Europe/Berlin
    shell: "echo trying; exit 3"
    timeout: 30s
    retries: 1
    starting_deadline: 1m
`

// webDaemon starts a daemon called owner on the NATS at url and returns
// the base URL of its HTTP server.
func webDaemon(t *testing.T, url, owner string) string {
	t.Helper()
	dir := t.TempDir()
	cfg := writeConfig(t, dir, fmt.Sprintf(webConfig, url, owner, webToken, yamlQuote(xssPayload)))
	d, _ := startDaemon(t, cfg, &testlog.Buffer{})
	return "http://" + d.HTTPAddr().String()
}

// webEnv is what the browser tests share: two daemons on one NATS, the
// shared history, and one browser.
type webEnv struct {
	a, b string // base URLs of replica-a and replica-b
	hist *scheduler.History
}

// TestStatusPageEndToEnd drives headless Chromium against the pages of two
// in-process daemons sharing an embedded NATS server.
func TestStatusPageEndToEnd(t *testing.T) {
	br := webtest.Start(t, webtest.Options{Width: 1280, Height: 800})
	srv := natstest.RunServer(t, natstest.Options{})
	env := &webEnv{a: webDaemon(t, srv.ClientURL(), "replica-a"), b: webDaemon(t, srv.ClientURL(), "replica-b")}
	_, js := natstest.Connect(t, srv.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hist, err := scheduler.OpenHistory(ctx, js, scheduler.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	env.hist = hist
	for _, base := range []string{env.a, env.b} {
		waitFor(t, 20*time.Second, base+"/readyz 200", func() bool { code, _ := get(t, base+"/readyz"); return code == 200 })
	}
	t.Run("lists the jobs", func(t *testing.T) { env.testListsJobs(t, br.For(t)) })
	t.Run("a new run appears without a reload", func(t *testing.T) { env.testLiveRun(t, br.For(t)) })
	t.Run("output is visible and inert", func(t *testing.T) { env.testOutputInert(t, br.For(t)) })
	t.Run("actions need the token", func(t *testing.T) { env.testActions(t, br.For(t)) })
	t.Run("suspend stops the job on all replicas", func(t *testing.T) { env.testSuspend(t, br.For(t)) })
	t.Run("trigger answers at once and refuses a running job", env.testTriggerBusy)
	t.Run("the history at a glance", func(t *testing.T) { env.testGlance(t, br.For(t)) })
	t.Run("screenshot", func(t *testing.T) { env.testScreenshot(t, br.For(t)) })
}

// state reads a job's shared state.
func (e *webEnv) state(t *testing.T, name string) scheduler.JobState {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := e.hist.State(ctx, name)
	if err != nil {
		t.Fatalf("state of %s: %v", name, err)
	}
	return st
}

// post sends an action with the given bearer token and returns the status
// code and body.
func post(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// noPageProblems fails when the page logged errors or threw, other than
// the refused requests (403) a test provokes.
func noPageProblems(t *testing.T, b *webtest.Browser) {
	t.Helper()
	for _, p := range b.Problems() {
		if !strings.Contains(p, "403") {
			t.Errorf("page problem: %s", p)
		}
	}
}

func (e *webEnv) testListsJobs(t *testing.T, b *webtest.Browser) {
	b.ClearConsole()
	b.Navigate(e.a + "/")
	b.WaitCount("#jobs tbody tr[data-job]", 5, pageWait)
	for i, name := range []string{"tick", "report", "evil", "slow", "flaky"} { // configuration order
		if got := webtest.Eval[string](b, fmt.Sprintf("document.querySelectorAll('#jobs tbody tr[data-job]')[%d].dataset.job", i)); got != name {
			t.Errorf("row %d is %q, want %q", i, got, name)
		}
	}
	b.WaitText(`#jobs tr[data-job="tick"] .schedule`, "* * * * * * UTC", pageWait)
	b.WaitText(`#jobs tr[data-job="tick"] .status`, "succeeded", pageWait)
	b.WaitText(`#jobs tr[data-job="tick"] .next`, "(", pageWait)
	b.WaitText(`#jobs tr[data-job="report"] .status`, "never run", pageWait)
	b.WaitCount("#replicas tbody tr[data-owner]", 2, pageWait)
	b.WaitText(`#replicas tr[data-owner="replica-b"] .pid`, fmt.Sprint(os.Getpid()), pageWait)
	b.WaitText("#updated", "live · updated", pageWait)
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} { // still served beside the page
		if code, _ := get(t, e.a+p); code != http.StatusOK {
			t.Errorf("GET %s = %d", p, code)
		}
	}
	noPageProblems(t, b)
}

// testScreenshot writes docs/status-page.png when
// CRONLOCK_UPDATE_SCREENSHOT=1: replica-a's page with every job run once,
// one suspended and one running.
func (e *webEnv) testScreenshot(t *testing.T, b *webtest.Browser) {
	if os.Getenv("CRONLOCK_UPDATE_SCREENSHOT") != "1" {
		t.Skip("set CRONLOCK_UPDATE_SCREENSHOT=1 to write docs/status-page.png")
	}
	for _, p := range []string{"/api/jobs/report/suspend", "/api/jobs/slow/trigger"} {
		if code, body := post(t, e.a+p, webToken); code != http.StatusOK {
			t.Fatalf("POST %s: %d %s", p, code, body)
		}
	}
	defer post(t, e.a+"/api/jobs/report/resume", webToken)
	b.Navigate(e.a + "/")
	typeToken(b, "")
	b.WaitText(`#jobs tr[data-job="slow"] .lock`, "replica-a token", pageWait)
	b.WaitText(`#jobs tr[data-job="report"] .suspended`, "suspended", pageWait)
	b.WaitText(`#replicas tr[data-owner="replica-a"] .running`, "slow", pageWait)
	b.WaitTrue(`[...document.querySelectorAll('#replicas .offset')].every(c => c.textContent.endsWith('s'))`, pageWait)
	writeScreenshot(t, b.Screenshot())
}

// writeScreenshot stores the page's screenshot as docs/status-page.png.
func writeScreenshot(t *testing.T, png []byte) {
	_, file, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(file), "..", "..", "docs", "status-page.png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d bytes)", path, len(png))
}

func (e *webEnv) testLiveRun(t *testing.T, b *webtest.Browser) {
	b.ClearConsole()
	b.Navigate(e.a + "/jobs/report")
	b.WaitText("#updated", "live · updated", pageWait)
	before := b.Count("#runs .run")
	webtest.Eval[bool](b, "(window.__sameDocument = true)")
	// The trigger answers once the run holds its lock: it is in the shared
	// history from then on.
	if code, body := post(t, e.b+"/api/jobs/report/trigger", webToken); code != http.StatusOK {
		t.Fatalf("trigger: %d %s", code, body)
	}
	took := b.WaitCount("#runs .run", before+1, liveBound)
	t.Logf("the new run showed %v after the trigger answered", took.Round(time.Millisecond))
	if !b.Defined("window.__sameDocument") {
		t.Fatal("the page reloaded to show the new run")
	}
	b.WaitText("#runs .run:first-child", "manual", pageWait)
	b.WaitText("#runs .run:first-child .owner", "replica-b", pageWait)
	noPageProblems(t, b)
}

func (e *webEnv) testOutputInert(t *testing.T, b *webtest.Browser) {
	b.ClearConsole()
	if code, body := post(t, e.a+"/api/jobs/evil/trigger", webToken); code != http.StatusOK {
		t.Fatalf("trigger: %d %s", code, body)
	}
	waitFor(t, pageWait, "the evil run to finish", func() bool {
		runs := e.state(t, "evil").Runs
		return len(runs) > 0 && runs[0].Finished()
	})
	b.Navigate(e.a + "/jobs/evil")
	b.WaitText("#runs .run:first-child", "succeeded", pageWait)
	// The daemon keeps the output tail (history.output_tail, default 4096).
	b.WaitText("#runs .run:first-child .output", xssPayload, pageWait)
	if n := b.Count("#runs script, #runs img, main script, main img"); n != 0 {
		t.Fatalf("job output became %d elements", n)
	}
	// Give an injected onerror the chance to fire: wait for a later poll.
	b.WaitText("#updated", "live · updated", pageWait)
	stamp := webtest.Eval[string](b, "document.getElementById('updated').textContent")
	b.WaitTrue(fmt.Sprintf("document.getElementById('updated').textContent !== %q", stamp), pageWait)
	if b.Defined("window.__pwned") {
		t.Fatalf("job output executed: window.__pwned = %v", webtest.Eval[any](b, "window.__pwned"))
	}
	noPageProblems(t, b)
}

// typeToken replaces the page's admin token field's value with token.
func typeToken(b *webtest.Browser, token string) {
	webtest.Eval[bool](b, "(document.getElementById('token').value = '', sessionStorage.clear(), true)")
	if token != "" {
		b.Type("#token", token)
	}
}

func (e *webEnv) testActions(t *testing.T, b *webtest.Browser) {
	b.ClearConsole()
	b.Navigate(e.a + "/")
	typeToken(b, "")
	row := `#jobs tr[data-job="report"]`
	runs := len(e.state(t, "report").Runs)
	b.Click(row + ` button[data-action="suspend"]`)
	b.WaitText("#message", "suspend report refused (403)", pageWait)
	typeToken(b, "wrong-token-0123456789")
	b.Click(row + ` button[data-action="trigger"]`)
	b.WaitText("#message", "trigger report refused (403)", pageWait)
	if st := e.state(t, "report"); st.Suspended != nil || len(st.Runs) != runs {
		t.Fatalf("refused actions changed the job: suspended %v, %d runs (was %d)", st.Suspended, len(st.Runs), runs)
	}
	typeToken(b, webToken)
	b.Click(row + ` button[data-action="trigger"]`)
	b.WaitText("#message", "trigger report: done", pageWait)
	waitFor(t, pageWait, "the triggered run in the history", func() bool {
		st := e.state(t, "report")
		return len(st.Runs) == runs+1 && st.Runs[0].Manual && st.Runs[0].Owner == "replica-a"
	})
	b.WaitText(row+" .status", "succeeded", pageWait)
	noPageProblems(t, b)
}

// testSuspend suspends the every-second job from replica-a's page and
// checks that neither replica starts it while suspended, then resumes it
// from replica-b's page.
func (e *webEnv) testSuspend(t *testing.T, b *webtest.Browser) {
	b.ClearConsole()
	b.Navigate(e.a + "/")
	typeToken(b, webToken)
	row := `#jobs tr[data-job="tick"]`
	b.Click(row + ` button[data-action="suspend"]`)
	b.WaitText("#message", "suspend tick: done", pageWait)
	answered := time.Now()
	st := e.state(t, "tick")
	if st.Suspended == nil || st.Suspended.By != "web" {
		t.Fatalf("suspension in the shared history = %+v, want one by web", st.Suspended)
	}
	b.WaitText(row+" .suspended", "suspended", pageWait)
	// Replicas learn of it through their watch, well within a second; from
	// then on, for the next 3 s, no run of the job may start anywhere.
	quiet := answered.Add(time.Second)
	for end := quiet.Add(3 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		for _, r := range e.state(t, "tick").Runs {
			if r.Status != scheduler.StatusSkipped && r.Start.After(quiet) {
				t.Fatalf("a run started on %s at %v while the job was suspended (since %v)", r.Owner, r.Start, answered)
			}
		}
	}
	// Replica-b's page shows it suspended too; resume from there.
	b.Navigate(e.b + "/")
	b.WaitText(row+" .suspended", "suspended", pageWait)
	typeToken(b, webToken)
	b.Click(row + ` button[data-action="resume"]`)
	b.WaitText("#message", "resume tick: done", pageWait)
	resumed := time.Now()
	if st := e.state(t, "tick"); st.Suspended != nil {
		t.Fatalf("still suspended after resume: %+v", st.Suspended)
	}
	waitFor(t, pageWait, "a run after the resume", func() bool {
		runs := e.state(t, "tick").Runs
		return len(runs) > 0 && runs[0].Status != scheduler.StatusSkipped && runs[0].Start.After(resumed)
	})
	b.WaitText(row+" .suspended", "no", pageWait)
	noPageProblems(t, b)
}

// testTriggerBusy: a trigger answers while its run goes on, and a second
// one, from another replica, is refused with an error naming the holder.
func (e *webEnv) testTriggerBusy(t *testing.T) {
	start := time.Now()
	if code, body := post(t, e.a+"/api/jobs/slow/trigger", webToken); code != http.StatusOK {
		t.Fatalf("trigger: %d %s", code, body)
	}
	if took := time.Since(start); took > 2500*time.Millisecond { // the run takes 3 s
		t.Errorf("the trigger answered after %v: it waited for the run", took)
	}
	code, body := post(t, e.b+"/api/jobs/slow/trigger", webToken)
	if code != http.StatusConflict || !strings.Contains(body, `job \"slow\" is running already on replica-a (token `) || strings.Contains(body, "conflict") {
		t.Errorf("second trigger = %d %s", code, body)
	}
	if code, body := post(t, e.b+"/api/jobs/nosuch/trigger", webToken); code != http.StatusNotFound {
		t.Errorf("trigger of an unknown job = %d %s", code, body)
	}
	e.testRunningLock(t, e.b, "slow", "replica-a")
	waitFor(t, pageWait, "the slow run to succeed", func() bool {
		runs := e.state(t, "slow").Runs
		return len(runs) == 1 && runs[0].Status == scheduler.StatusSucceeded && runs[0].Owner == "replica-a"
	})
}

// testRunningLock: the API of the replica at base shows the job running
// on owner, with its lock (read from the job's record) in the job's detail:
// the run's token, acquired at its start and expiring a lease (4 s) after
// its last renewal at most.
func (e *webEnv) testRunningLock(t *testing.T, base, name, owner string) {
	t.Helper()
	var d web.JobDetail
	code, body := get(t, base+"/api/jobs/"+name)
	if err := json.Unmarshal([]byte(body), &d); code != http.StatusOK || err != nil {
		t.Fatalf("GET /api/jobs/%s: %d %v %s", name, code, err, body)
	}
	runs := e.state(t, name).Runs
	if len(runs) == 0 || runs[0].Status != scheduler.StatusRunning {
		t.Fatalf("%s: runs %+v, want it running", name, runs)
	}
	l, r := d.Lock, runs[0]
	switch {
	case !d.Running || d.Holder != owner || d.Token != r.Token:
		t.Errorf("%s: running %v on %q token %d, want on %s token %d", name, d.Running, d.Holder, d.Token, owner, r.Token)
	case l == nil:
		t.Errorf("%s: no lock in %s", name, body)
	case l.Owner != owner || l.Token != r.Token || l.AcquiredAt.IsZero() || !l.ExpiresAt.After(l.AcquiredAt) ||
		l.ExpiresAt.After(time.Now().Add(4*time.Second+time.Second)):
		t.Errorf("%s: lock %+v, want %s's, token %d, expiring within a lease", name, *l, owner, r.Token)
	}
}

// TestStatusPageBeforeNATS: while the daemon waits for NATS, the page and
// the API answer 503 saying it is starting (and what it waits for), the
// rest of the HTTP server works, and the log says so once, not once per
// request; once NATS is up they answer, and the log says that once too.
func TestStatusPageBeforeNATS(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0") // a port where no NATS answers yet
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	url := "nats://" + ln.Addr().String()
	ln.Close()
	logs := &testlog.Buffer{}
	cfg := writeConfig(t, t.TempDir(), fmt.Sprintf(webConfig, url, "replica-early", webToken, yamlQuote(xssPayload)))
	d, stop := startDaemon(t, cfg, logs)
	// Stop the daemon before the server that the cleanup stops after it: a
	// run that ends while NATS is gone keeps its replica trying to record
	// it for shutdown_grace (30 s), which is the contract, not a hang.
	defer stop()
	base := "http://" + d.HTTPAddr().String()
	waitFor(t, pageWait, "/readyz to name the NATS URL", func() bool {
		code, body := get(t, base+"/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "connecting to "+url)
	})
	starting := "cronlock is starting: connecting to " + url
	for range 5 { // as a page left open polls
		code, body := get(t, base+"/")
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "Cannot load the status: "+starting) {
			t.Fatalf("GET / before NATS = %d\n%s", code, body)
		}
		code, body = get(t, base+"/api/jobs")
		var apiErr struct{ Error string }
		if err := json.Unmarshal([]byte(body), &apiErr); err != nil || code != http.StatusServiceUnavailable ||
			!strings.HasPrefix(apiErr.Error, starting) {
			t.Fatalf("GET /api/jobs before NATS = %d %s", code, body)
		}
	}
	for _, path := range []string{"/jobs/tick", "/api/jobs/tick", "/api/jobs/tick/runs", "/api/replicas"} {
		if code, body := get(t, base+path); code != http.StatusServiceUnavailable || !strings.Contains(body, starting) {
			t.Errorf("GET %s before NATS = %d %s", path, code, body)
		}
	}
	if code, body := post(t, base+"/api/jobs/tick/suspend", webToken); code != http.StatusServiceUnavailable ||
		!strings.Contains(body, starting) {
		t.Errorf("suspend before NATS = %d %s", code, body)
	}
	if resp, err := http.Get(base + "/api/jobs"); err != nil || resp.Header.Get("Retry-After") == "" {
		t.Errorf("GET /api/jobs before NATS: %v, no Retry-After header", err)
	} else {
		resp.Body.Close()
	}
	if code, _ := get(t, base+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz before NATS = %d", code)
	}

	natstest.RunServer(t, natstest.Options{Configure: func(o *server.Options) { o.Port = port }})
	waitFor(t, pageWait, "/api/jobs to answer once NATS is up", func() bool {
		code, _ := get(t, base+"/api/jobs")
		return code == http.StatusOK
	})
	get(t, base+"/")
	out := logs.String()
	if n := strings.Count(out, "status page: unavailable"); n != 1 {
		t.Errorf("%d log lines for the page being unavailable, want 1:\n%s", n, out)
	}
	if n := strings.Count(out, "status page: available"); n != 1 {
		t.Errorf("%d log lines for the page being available again, want 1:\n%s", n, out)
	}
	if strings.Contains(out, "source failed") {
		t.Errorf("requests during start-up logged as failures:\n%s", out)
	}
}
