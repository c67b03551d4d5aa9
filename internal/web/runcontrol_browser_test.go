package web_test

import (
	"strings"
	"testing"

	"github.com/cronlock/cronlock/internal/web"
	"github.com/cronlock/cronlock/internal/webtest"
)

// The job view's run control in Chromium: a running job has a Cancel
// button (an idle one has none) that cancels it; the backfill form's dry
// run lists the ticks and its Backfill starts them; both send the admin
// token.
func testRunControl(t *testing.T, b *webtest.Browser) {
	b.ClearConsole()
	src := fixture()
	srv := serve(t, src, web.Options{AdminToken: adminToken})
	b.Navigate(srv.URL + "/jobs/backup")
	webtest.Eval[bool](b, "(sessionStorage.clear(), true)")
	b.Navigate(srv.URL + "/jobs/backup")
	b.WaitText("#summary .status", "succeeded", pageWait)
	if n := b.Count(`#actions button[data-action="cancel"]`); n != 0 {
		t.Errorf("an idle job's view has %d Cancel buttons, want none", n)
	}
	b.Type("#token", adminToken)
	b.Type(`#backfill input[name="from"]`, "2026-11-30T10:00:00Z")
	b.Type(`#backfill input[name="to"]`, "2026-11-30T10:02:00Z")
	b.Click(`#backfill button[value="dry"]`)
	b.WaitText("#message", "backfill backup would run 3 tick(s)", pageWait)
	b.Click(`#backfill button[value="start"]`)
	b.WaitText("#message", "backfill backup: started 3 tick(s)", pageWait)
	if n := src.count("backfill backup"); n != 2 {
		t.Errorf("the source saw %d backfill requests, want 2 (dry run and start)", n)
	}

	b.Navigate(srv.URL + "/jobs/report")
	b.Click(`#actions button[data-action="cancel"]`)
	b.WaitText("#message", "cancel report: done", pageWait)
	b.WaitText("#lock .owner", "not held", pageWait)
	if n := src.count("cancel report"); n != 1 {
		t.Errorf("the source saw %d cancels of report, want 1", n)
	}
	for _, p := range b.Problems() {
		if !strings.Contains(p, "403") {
			t.Errorf("page problem: %s", p)
		}
	}
}
