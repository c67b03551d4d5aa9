package web_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/web"
	"github.com/cronlock/cronlock/internal/webtest"
)

// liveBound is the bound for a new run to show without a reload.
const liveBound = 2 * time.Second

// pageWait bounds waits for things that are already there when the page
// loads (the machine may be loaded).
const pageWait = 15 * time.Second

// TestStatusPageInBrowser drives headless Chromium against the handler over
// an in-memory source. The subtests share one browser to save CPU; each has
// its own server and source.
func TestStatusPageInBrowser(t *testing.T) {
	b := webtest.Start(t, webtest.Options{Width: 1280, Height: 800})
	t.Run("lists the jobs and replicas", func(t *testing.T) { testListsJobs(t, b.For(t)) })
	t.Run("a new run appears without a reload", func(t *testing.T) { testLiveUpdate(t, b.For(t)) })
	t.Run("output tails are visible and inert", func(t *testing.T) { testOutputInert(t, b.For(t)) })
	t.Run("actions need the token", func(t *testing.T) { testActions(t, b.For(t)) })
	t.Run("read-only without an admin token", func(t *testing.T) { testReadOnly(t, b.For(t)) })
	t.Run("the read token is entered once", func(t *testing.T) { testReadLogin(t, b.For(t)) })
	t.Run("readable at phone width", func(t *testing.T) { testPhoneWidth(t, b.For(t)) })
	t.Run("the overview shows each job's history at a glance", func(t *testing.T) { testGlanceOverview(t, b.For(t)) })
	t.Run("the job view charts durations and shows the definition", func(t *testing.T) { testGlanceJobView(t, b.For(t)) })
	t.Run("the job view cancels and backfills", func(t *testing.T) { testRunControl(t, b.For(t)) })
	t.Run("a large configuration is shown a page at a time", func(t *testing.T) { testPagedOverview(t, b.For(t)) })
}

// noProblems fails when the page logged errors or threw.
func noProblems(t *testing.T, b *webtest.Browser) {
	t.Helper()
	if p := b.Problems(); len(p) > 0 {
		t.Fatalf("the page reported problems:\n%s", strings.Join(p, "\n"))
	}
}

func testListsJobs(t *testing.T, b *webtest.Browser) {
	b.ClearConsole()
	srv := serve(t, fixture(), web.Options{})
	b.Navigate(srv.URL + "/")
	b.WaitCount("#jobs tbody tr[data-job]", 3, pageWait)
	b.WaitText(`#jobs tr[data-job="backup"] .schedule`, "*/5 * * * * Europe/Berlin", pageWait)
	b.WaitText(`#jobs tr[data-job="backup"] .status`, "succeeded", pageWait)
	b.WaitText(`#jobs tr[data-job="backup"] .duration`, "4.2s", pageWait)
	b.WaitText(`#jobs tr[data-job="backup"] .next`, "(in ", pageWait)
	b.WaitText(`#jobs tr[data-job="backup"] .last`, "2026-11-30 12:00:00Z", pageWait)
	b.WaitText(`#jobs tr[data-job="report"] .lock`, "replica-b token 12", pageWait)
	b.WaitText(`#jobs tr[data-job="report"] .suspended`, "no", pageWait)
	b.WaitText(`#replicas tr[data-owner="replica-b"]`, "node-2 202 v1.4.0", pageWait)
	b.WaitText(`#replicas tr[data-owner="replica-b"] .running`, "report", pageWait)
	b.WaitText(`#replicas tr[data-owner="replica-b"] .offset`, "+0.012s", pageWait)
	b.WaitText(`#replicas tr[data-owner="replica-b"] .labels`, "role=batch, zone=eu-1", pageWait)
	b.WaitText(`#replicas tr[data-owner="replica-a"] .labels`, "none", pageWait)
	b.WaitText("#updated", "live · updated", pageWait) // the script polled at least once
	b.WaitText(`#jobs tr[data-job="report"] .schedule`, "@hourly UTC · runtime", pageWait)
	b.WaitText(`#jobs tr[data-job="evil"] .next`, "ended 2026-11-30 11:00:00Z", pageWait)
	if s := webtest.Eval[string](b, `document.querySelector('#jobs tr[data-job="backup"] .schedule').textContent`); strings.Contains(s, "runtime") {
		t.Errorf("a file job's schedule cell says %q", s)
	}
	noProblems(t, b)
	b.Navigate(srv.URL + "/jobs/report")
	b.WaitText("#summary .source", "at run time revision 7", pageWait)
	if os.Getenv("CRONLOCK_UPDATE_SCREENSHOT") == "1" {
		writeScreenshot(t, b.Screenshot())
	}
}

// writeScreenshot stores the job list's screenshot as docs/status-page.png.
func writeScreenshot(t *testing.T, png []byte) {
	_, file, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(file), "..", "..", "docs", "status-page.png")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d bytes)", path, len(png))
}

func testLiveUpdate(t *testing.T, b *webtest.Browser) {
	b.ClearConsole()
	src := fixture()
	srv := serve(t, src, web.Options{})
	for _, page := range []struct{ path, sel, status, want string }{
		{"/jobs/backup", "#runs .run:first-child", "timeout", "live-run-one"},
		{"/", `#jobs tr[data-job="backup"] .status`, "lost", "lost"},
	} {
		b.Navigate(srv.URL + page.path)
		b.WaitText("#updated", "live · updated", pageWait)
		webtest.Eval[bool](b, "(window.__sameDocument = true)")
		now := time.Now().UTC()
		exit := 124
		src.addRun("backup", web.Run{Tick: now, Status: page.status, Attempts: 1, Start: now.Add(-time.Second),
			End: now, DurationSeconds: 1, ExitCode: &exit, Output: "live-run-one\n", Owner: "replica-a", Token: 8})
		took := b.WaitText(page.sel, page.want, liveBound)
		t.Logf("%s: the new run showed after %v", page.path, took.Round(time.Millisecond))
		if !b.Defined("window.__sameDocument") {
			t.Fatalf("%s: the page reloaded to show the new run", page.path)
		}
	}
	noProblems(t, b)
}

func testOutputInert(t *testing.T, b *webtest.Browser) {
	b.ClearConsole()
	src := fixture()
	srv := serve(t, src, web.Options{})
	b.Navigate(srv.URL + "/jobs/evil")
	// First paint (server-rendered by html/template).
	b.WaitText("#runs .run .output", xssPayload, pageWait)
	b.WaitText("#runs .run .run-error", xssPayload, pageWait)
	b.WaitText("#runs .run .reason", xssPayload, pageWait)
	// A live update (rendered by the page's script).
	now := time.Now().UTC()
	src.addRun("evil", web.Run{Tick: now, Status: "failed", Start: now, End: now, Output: "second " + xssPayload,
		Error: xssPayload, Owner: "replica-b", Token: 4})
	b.WaitText("#runs .run:first-child .output", "second "+xssPayload, pageWait)
	b.WaitCount("#runs .run", 2, pageWait)
	if n := b.Count("#runs script, #runs img, main script, main img"); n != 0 {
		t.Fatalf("job output became %d elements", n)
	}
	// Give an injected onerror (which fires when src=x fails to load) the
	// chance to run: wait for another poll to complete, then look.
	b.WaitText("#updated", "live · updated", pageWait)
	before := webtest.Eval[string](b, "document.getElementById('updated').textContent")
	b.WaitTrue("document.getElementById('updated').textContent !== "+jsQuote(before), pageWait)
	if b.Defined("window.__pwned") {
		t.Fatalf("job output executed: window.__pwned = %v", webtest.Eval[any](b, "window.__pwned"))
	}
	noProblems(t, b)
}

func jsQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

func testActions(t *testing.T, b *webtest.Browser) {
	b.ClearConsole()
	src := fixture()
	srv := serve(t, src, web.Options{AdminToken: adminToken})
	b.Navigate(srv.URL + "/")
	webtest.Eval[bool](b, "(sessionStorage.clear(), true)")
	b.Navigate(srv.URL + "/")
	row := `#jobs tr[data-job="backup"]`
	// No token typed: the server refuses and the page says so.
	b.Click(row + ` button[data-action="suspend"]`)
	b.WaitText("#message", "refused (403)", pageWait)
	if src.totalCalls() != 0 || src.suspended("backup") {
		t.Fatal("an action without the token reached the source")
	}
	// A wrong token is refused too.
	b.Type("#token", "wrong")
	b.Click(row + ` button[data-action="trigger"]`)
	b.WaitText("#message", "trigger backup refused (403)", pageWait)
	webtest.Eval[bool](b, "(document.getElementById('token').value = '', true)")
	b.Type("#token", adminToken)
	b.Click(row + ` button[data-action="suspend"]`)
	b.WaitText("#message", "suspend backup: done", pageWait)
	b.WaitText(row+" .suspended", "suspended", pageWait)
	b.WaitText(row+" .next", "—", pageWait)
	if !src.suspended("backup") || src.count("suspend backup") != 1 {
		t.Fatalf("suspend from the page: suspended=%v calls=%d", src.suspended("backup"), src.count("suspend backup"))
	}
	// The token survives a reload (sessionStorage), and resume replaces suspend.
	b.Navigate(srv.URL + "/jobs/backup")
	b.Click(`#actions button[data-action="resume"]`)
	b.WaitText("#message", "resume backup: done", pageWait)
	b.WaitText("#summary .suspended", "no", pageWait)
	b.WaitText("#summary .source", "in the configuration file", pageWait)
	b.Click(`#actions button[data-action="trigger"]`)
	b.WaitText("#message", "trigger backup: done", pageWait)
	b.WaitText("#runs .run:first-child", "triggered from the status page", pageWait)
	if src.suspended("backup") || src.count("trigger backup") != 1 {
		t.Fatalf("resume/trigger from the page: suspended=%v triggers=%d", src.suspended("backup"), src.count("trigger backup"))
	}
	for _, p := range b.Problems() {
		// The browser logs each refused request (403) as a console error;
		// anything else is a problem.
		if !strings.Contains(p, "403") {
			t.Errorf("page problem: %s", p)
		}
	}
}

func testReadOnly(t *testing.T, b *webtest.Browser) {
	b.ClearConsole()
	srv := serve(t, fixture(), web.Options{})
	for _, p := range []string{"/", "/jobs/backup"} {
		b.Navigate(srv.URL + p)
		b.WaitText("#updated", "live · updated", pageWait)
		if n := b.Count("button, #token"); n != 0 {
			t.Fatalf("%s without an admin token shows %d buttons or token fields", p, n)
		}
	}
	noProblems(t, b)
}

// testReadLogin: with a read token the page asks for it; entered once (a
// wrong one is refused), it shows the jobs, on every page, live.
func testReadLogin(t *testing.T, b *webtest.Browser) {
	b.ClearConsole()
	srv := serve(t, fixture(), web.Options{ReadToken: readToken})
	b.Navigate(srv.URL + "/")
	b.WaitCount("#login-token", 1, pageWait)
	if n := b.Count("#jobs tbody tr[data-job]"); n != 0 {
		t.Fatalf("the login page shows %d jobs", n)
	}
	b.Type("#login-token", "wrong")
	b.Click("#login-submit")
	b.WaitText("#login-error", "not the read token", pageWait)
	b.Type("#login-token", readToken)
	b.Click("#login-submit")
	b.WaitCount("#jobs tbody tr[data-job]", 3, pageWait)
	b.WaitText("#updated", "live · updated", pageWait) // the API answers the script too
	if c := webtest.Eval[string](b, "document.cookie"); strings.Contains(c, web.ReadCookie) {
		t.Fatalf("the session cookie is readable by scripts: %q", c)
	}
	b.Navigate(srv.URL + "/jobs/backup")
	b.WaitText("#updated", "live · updated", pageWait)
	if b.Count("#login-token") != 0 {
		t.Fatal("the job page asks for the token again")
	}
	for _, p := range b.Problems() {
		// The browser logs the 401 answers before the login as errors.
		if !strings.Contains(p, "401") {
			t.Errorf("page problem: %s", p)
		}
	}
}

func testPhoneWidth(t *testing.T, b *webtest.Browser) {
	b.ClearConsole()
	srv := serve(t, fixture(), web.Options{AdminToken: adminToken})
	b.Viewport(375, 740, true)
	t.Cleanup(func() { b.Viewport(1280, 800, false) })
	for _, p := range []string{"/", "/jobs/evil"} {
		b.Navigate(srv.URL + p)
		b.WaitText("#updated", "live · updated", pageWait)
		if w := webtest.Eval[int](b, "window.innerWidth"); w != 375 {
			t.Fatalf("viewport is %d wide, want 375", w)
		}
		if over := webtest.Eval[int](b, "document.documentElement.scrollWidth - window.innerWidth"); over > 0 {
			t.Fatalf("%s at phone width scrolls sideways by %dpx", p, over)
		}
	}
	// The job list turns into cards: no header row, labels beside values.
	b.Navigate(srv.URL + "/")
	b.WaitText(`#jobs tr[data-job="backup"] .name`, "backup", pageWait)
	if webtest.Eval[string](b, "getComputedStyle(document.querySelector('#jobs thead')).display") != "none" {
		t.Fatal("the table header still shows at phone width")
	}
	label := webtest.Eval[string](b, `getComputedStyle(document.querySelector('#jobs tr[data-job="backup"] .next'), '::before').content`)
	if label != `"Next run"` {
		t.Fatalf("cards lack labels: ::before content = %s", label)
	}
	noProblems(t, b)
}
