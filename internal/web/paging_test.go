package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/cronlock/cronlock/internal/web"
	"github.com/cronlock/cronlock/internal/webtest"
)

// manyJobs is a source of n file jobs named job-0000… in reverse order, so
// that the page's order (the source's) is not the names'.
func manyJobs(n int) *memSource {
	m := newMemSource()
	for i := n - 1; i >= 0; i-- {
		m.put(web.JobDetail{Job: web.Job{Name: fmt.Sprintf("job-%04d", i), Source: "file", Schedule: "@daily", Timezone: "UTC"}})
	}
	return m
}

func (m *memSource) rowsBuilt() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rows
}

// A configuration larger than the page shows is shown a page at a time,
// sorted by name, and a request reads only that page's jobs (plus one, to
// know whether a next page follows); a small one is shown whole, in the
// source's order.
func TestIndexShowsLargeConfigurationsByPage(t *testing.T) {
	t.Parallel()
	n := web.IndexPageJobs + 150
	src := manyJobs(n)
	srv := serve(t, src, web.Options{})

	code, body, _ := call(t, http.MethodGet, srv.URL+"/", "")
	if code != http.StatusOK {
		t.Fatalf("GET /: %d", code)
	}
	if got := strings.Count(body, "<tr data-job="); got != web.IndexPageJobs {
		t.Errorf("first page: %d rows, want %d", got, web.IndexPageJobs)
	}
	last := fmt.Sprintf("job-%04d", web.IndexPageJobs-1)
	for _, want := range []string{fmt.Sprintf("Jobs 1–%d of <span id=\"jobs-total\">%d</span>", web.IndexPageJobs, n),
		`href="/?after=` + last + `"`, `<tr data-job="job-0000">`} {
		if !strings.Contains(body, want) {
			t.Errorf("first page lacks %q", want)
		}
	}
	if built := src.rowsBuilt(); built > web.IndexPageJobs+2 {
		t.Errorf("the first page read %d jobs of %d, want at most %d", built, n, web.IndexPageJobs+2)
	}

	before := src.rowsBuilt()
	_, body, _ = call(t, http.MethodGet, srv.URL+"/?after="+last, "")
	if got := strings.Count(body, "<tr data-job="); got != 150 {
		t.Errorf("second page: %d rows, want 150", got)
	}
	if !strings.Contains(body, fmt.Sprintf("Jobs %d–%d of", web.IndexPageJobs+1, n)) || strings.Contains(body, `id="next-page"`) {
		t.Errorf("second page: want rows %d–%d and no next link", web.IndexPageJobs+1, n)
	}
	if built := src.rowsBuilt() - before; built > 150 {
		t.Errorf("the second page read %d jobs, want at most 150", built)
	}

	before = src.rowsBuilt()
	_, body, _ = call(t, http.MethodGet, srv.URL+"/api/jobs?limit=10", "")
	var resp struct {
		Jobs      []web.Job `json:"jobs"`
		Total     int       `json:"total"`
		NextAfter string    `json:"next_after"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.Jobs) != 10 || resp.Total != n || resp.NextAfter != "job-0009" {
		t.Errorf("/api/jobs?limit=10: %d jobs, total %d, next_after %q; want 10, %d, job-0009", len(resp.Jobs), resp.Total, resp.NextAfter, n)
	}
	if built := src.rowsBuilt() - before; built > 11 {
		t.Errorf("/api/jobs?limit=10 read %d jobs, want at most 11", built)
	}

	before = src.rowsBuilt()
	_, body, _ = call(t, http.MethodGet, srv.URL+"/?q=-06", "") // job-0600 … job-0649
	if got := strings.Count(body, "<tr data-job="); got != 50 || !strings.Contains(body, "of <span id=\"jobs-total\">50</span> whose names contain") {
		t.Errorf("filtered page: %d rows, want 50 of 50 whose names contain -06", got)
	}
	if built := src.rowsBuilt() - before; built > 50 {
		t.Errorf("the filtered page read %d jobs, want at most 50", built)
	}

	small := serve(t, manyJobs(3), web.Options{})
	_, body, _ = call(t, http.MethodGet, small.URL+"/", "")
	if strings.Contains(body, `id="pager"`) || strings.Index(body, `data-job="job-0002"`) > strings.Index(body, `data-job="job-0000"`) {
		t.Errorf("a small configuration is paged or not in the source's order")
	}
}

// The page of a large configuration keeps its window as it polls, and the
// next link moves it.
func testPagedOverview(t *testing.T, b *webtest.Browser) {
	b.ClearConsole()
	n := web.IndexPageJobs + 150
	src := manyJobs(n)
	srv := serve(t, src, web.Options{})
	b.Navigate(srv.URL + "/")
	b.WaitCount("#jobs tbody tr[data-job]", web.IndexPageJobs, pageWait)
	b.WaitText("#updated", "live · updated", pageWait)
	b.Click("#next-page")
	b.WaitText("#pager", fmt.Sprintf("Jobs %d–%d of %d", web.IndexPageJobs+1, n, n), pageWait)
	b.WaitCount("#jobs tbody tr[data-job]", 150, pageWait)
	src.put(web.JobDetail{Job: web.Job{Name: "zz-added", Source: "file", Schedule: "@daily", Timezone: "UTC"}})
	b.WaitText("#jobs-total", fmt.Sprint(n+1), liveBound+pageWait) // a poll, with the window's query
	b.WaitText(`#jobs tr[data-job="zz-added"] .schedule`, "@daily", pageWait)
	if got := b.Count("#jobs tbody tr[data-job]"); got != 151 {
		t.Errorf("after a poll the second page has %d rows, want 151", got)
	}
	if first := webtest.Eval[string](b, `document.querySelector('#jobs tbody tr[data-job]').dataset.job`); first != fmt.Sprintf("job-%04d", web.IndexPageJobs) {
		t.Errorf("after a poll the second page starts at %q", first)
	}

	b.Type(`#filter input[name="q"]`, "-012")
	b.Click(`#filter button`)
	b.WaitText("#pager", "Jobs 1–10 of 10 whose names contain “-012”", pageWait)
	b.WaitCount("#jobs tbody tr[data-job]", 10, pageWait)
	src.put(web.JobDetail{Job: web.Job{Name: "job-012x", Source: "file", Schedule: "@daily", Timezone: "UTC"}})
	b.WaitText("#jobs-total", "11", liveBound+pageWait) // the poll keeps the filter
	if got := b.Count("#jobs tbody tr[data-job]"); got != 11 {
		t.Errorf("after a poll the filtered page has %d rows, want 11", got)
	}
	noProblems(t, b)
}
