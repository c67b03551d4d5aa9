package web_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/web"
	"github.com/cronlock/cronlock/internal/webtest"
)

// backupCells are the classes of the fixture's backup strip, oldest left.
var backupCells = []string{"c-succeeded", "c-other", "c-cancelled", "c-skipped", "c-missed", "c-failed", "c-succeeded"}

// cellClasses returns the colour classes of the cells matching sel.
func cellClasses(b *webtest.Browser, sel string) []string {
	return webtest.Eval[[]string](b, `[...document.querySelectorAll(`+jsQuote(sel)+`)].map(c => [...c.classList].filter(k => k.startsWith('c-')).join(' '))`)
}

func sameList(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }

// testGlanceOverview: each job's strip of runs, its success rate, who ran
// the last run and the next run in the job's own zone, on the first paint
// (the template) and after the script's renders.
func testGlanceOverview(t *testing.T, b *webtest.Browser) {
	b.ClearConsole()
	src := fixture()
	srv := serve(t, src, web.Options{})
	// The server's first paint, as a browser without the script gets it.
	code, html, _ := call(t, http.MethodGet, srv.URL+"/", "")
	for _, want := range []string{`class="cell c-missed" title="missed · 2026-11-30 11:50:00Z · —"`, `<span class="rate"`, ">67%<", "on replica-a"} {
		if code != http.StatusOK || !strings.Contains(html, want) {
			t.Fatalf("GET / (%d) lacks %s", code, want)
		}
	}
	b.Navigate(srv.URL + "/")
	b.WaitText("#updated", "live · updated", pageWait) // the script has rendered the rows
	row := `#jobs tr[data-job="backup"]`
	if got := cellClasses(b, row+" .strip .cell"); !sameList(got, backupCells) {
		t.Fatalf("backup's strip = %v, want %v", got, backupCells)
	}
	newest := webtest.Eval[string](b, `document.querySelector('`+row+` .strip .cell:last-child').title`)
	if newest != "succeeded · 2026-11-30 12:00:00Z · 4.2s" {
		t.Errorf("the newest cell's title = %q", newest)
	}
	b.WaitText(row+" .rate", "67%", pageWait)
	b.WaitText(`#jobs tr[data-job="evil"] .rate`, "—", pageWait)
	b.WaitText(row+" .last", "2026-11-30 12:00:00Z on replica-a", pageWait)
	b.WaitText(`#jobs tr[data-job="report"] .last-owner`, "on replica-b", pageWait)
	zone := time.Now().In(berlin()).Format("MST") // CET or CEST
	b.WaitText(row+" .next", zone+" (in ", pageWait)
	b.WaitText(`#jobs tr[data-job="report"] .strip .cell.c-running`, "", pageWait)
	// A new run joins the strip on the right without a reload.
	now := time.Now().UTC()
	src.addRun("backup", web.Run{Tick: now, Status: "lost", Start: now.Add(-2 * time.Second), End: now,
		DurationSeconds: 2, Owner: "replica-c", Token: 9, Failed: true})
	b.WaitCount(row+" .strip .cell", len(backupCells)+1, liveBound)
	if got := cellClasses(b, row+" .strip .cell:last-child"); !sameList(got, []string{"c-failed"}) {
		t.Errorf("a lost run's cell is %v, want c-failed", got)
	}
	b.WaitText(row+" .last-owner", "on replica-c", pageWait)
	noProblems(t, b)
}

// testGlanceJobView: the job view's duration chart (bars by status, the
// axis labelled) and its definition, run-control keys only when set to
// other than their defaults.
func testGlanceJobView(t *testing.T, b *webtest.Browser) {
	b.ClearConsole()
	srv := serve(t, fixture(), web.Options{})
	b.Navigate(srv.URL + "/jobs/backup")
	bars := "#durations svg rect.bar"
	b.WaitCount(bars, 2, pageWait)
	if got := cellClasses(b, bars); !sameList(got, []string{"c-failed", "c-succeeded"}) {
		t.Fatalf("bars oldest first = %v, want failed then succeeded", got)
	}
	heights := webtest.Eval[[]float64](b, `[...document.querySelectorAll('`+bars+`')].map(r => r.getBBox().height)`)
	if !(heights[1] > 3*heights[0]) { // 4.2 s against 1 s
		t.Errorf("bar heights %v do not follow the durations 1s, 4.2s", heights)
	}
	b.WaitText("#durations .y-max", "4.2s", pageWait)
	b.WaitText("#durations .y-min", "0s", pageWait)
	b.WaitText("#durations .x-label", "last 2 runs, oldest left", pageWait)
	b.WaitText("#durations rect.bar.c-failed title", "failed · 2026-11-30 11:55:00Z · 1.0s", pageWait)
	for sel, want := range map[string]string{
		"#definition .shell": "pg_dump --all > /backup/db.sql", "#definition .timeout": "5m0s",
		"#definition .retries": "2 every 30s", "#definition .starting-deadline": "10m0s",
		"#definition .overlap": "queue", "#definition .group": "backups",
	} {
		b.WaitText(sel, want, pageWait)
	}
	b.WaitText("#summary .next", "(in ", pageWait)
	for _, sel := range []string{"#definition .max-parallel", "#definition .run-on", "#definition .kind"} {
		if n := b.Count(sel); n != 0 { // max_parallel 1 and run_on one are the defaults
			t.Errorf("%s is shown", sel)
		}
	}
	b.Navigate(srv.URL + "/jobs/report")
	b.WaitCount("#durations svg rect.bar.c-running", 1, pageWait)
	b.WaitText("#definition .kind", "report", pageWait)
	b.WaitText("#definition .run-on", "every_replica", pageWait)
	b.WaitText("#definition .timeout", "none", pageWait)
	b.Navigate(srv.URL + "/jobs/evil")
	b.WaitCount("#durations svg rect.bar", 1, pageWait)
	if !webtest.Eval[bool](b, "document.getElementById('definition-section').hidden") {
		t.Error("a job without settings shows a definition")
	}
	noProblems(t, b)
}
