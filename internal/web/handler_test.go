package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cronlock/cronlock/internal/web"
)

const adminToken = "s3cret-admin-token"

// serve starts the handler over src on a real loopback listener.
func serve(t *testing.T, src web.Source, opts web.Options) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(web.Handler(src, opts))
	t.Cleanup(srv.Close)
	return srv
}

// call sends one request and returns the status and body.
func call(t *testing.T, method, url, token string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body), resp.Header
}

func TestAPIJobsIsSnakeCaseJSON(t *testing.T) {
	srv := serve(t, fixture(), web.Options{})
	code, body, h := call(t, "GET", srv.URL+"/api/jobs", "")
	if code != 200 || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
		t.Fatalf("GET /api/jobs: %d %s\n%s", code, h.Get("Content-Type"), body)
	}
	var got struct {
		Jobs []map[string]any `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Jobs) != 3 {
		t.Fatalf("want 3 jobs, got %d: %s", len(got.Jobs), body)
	}
	report := got.Jobs[1]
	for k, want := range map[string]any{"name": "report", "schedule": "@hourly", "timezone": "UTC",
		"running": true, "holder": "replica-b", "token": float64(12), "suspended": false, "last_status": "running"} {
		if report[k] != want {
			t.Errorf("jobs[1].%s = %v, want %v", k, report[k], want)
		}
	}
	for _, k := range []string{"next", "last_start", "last_duration_seconds"} {
		if _, ok := report[k]; !ok {
			t.Errorf("jobs[1] lacks %q: %v", k, report)
		}
	}
}

func TestAPIJobDetailRunsAndLock(t *testing.T) {
	srv := serve(t, fixture(), web.Options{})
	var d struct {
		Name string `json:"name"`
		Lock *struct {
			Owner     string `json:"owner"`
			Token     uint64 `json:"token"`
			ExpiresAt string `json:"expires_at"`
		} `json:"lock"`
		Runs []map[string]any `json:"runs"`
	}
	code, body, _ := call(t, "GET", srv.URL+"/api/jobs/report", "")
	if code != 200 || json.Unmarshal([]byte(body), &d) != nil {
		t.Fatalf("GET /api/jobs/report: %d %s", code, body)
	}
	if d.Lock == nil || d.Lock.Owner != "replica-b" || d.Lock.Token != 12 || d.Lock.ExpiresAt == "" {
		t.Fatalf("lock = %+v, want replica-b token 12 with expires_at", d.Lock)
	}
	code, body, _ = call(t, "GET", srv.URL+"/api/jobs/backup/runs", "")
	var runs struct {
		Runs []map[string]any `json:"runs"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &runs) != nil || len(runs.Runs) != 2 {
		t.Fatalf("GET /api/jobs/backup/runs: %d %s", code, body)
	}
	newest := runs.Runs[0]
	if newest["status"] != "succeeded" || newest["exit_code"] != float64(0) || newest["output"] != "dumped 42 tables\n" ||
		newest["duration_seconds"] != 4.2 {
		t.Fatalf("newest run = %v", newest)
	}
	if code, body, _ = call(t, "GET", srv.URL+"/api/jobs/backup", ""); !strings.Contains(body, `"lock": null`) {
		t.Fatalf("an unheld lock must be null: %d %s", code, body)
	}
}

func TestAPIReplicasAndEmptyLists(t *testing.T) {
	srv := serve(t, fixture(), web.Options{})
	code, body, _ := call(t, "GET", srv.URL+"/api/replicas", "")
	var got struct {
		Replicas []struct {
			Owner   string   `json:"owner"`
			PID     int      `json:"pid"`
			Running []string `json:"running"`
			Offset  *float64 `json:"clock_offset_seconds"`
		} `json:"replicas"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &got) != nil || len(got.Replicas) != 2 {
		t.Fatalf("GET /api/replicas: %d %s", code, body)
	}
	if !strings.Contains(body, `"running": []`) {
		t.Errorf("an idle replica's running must be [], not null: %s", body)
	}
	if !strings.Contains(body, `"labels": {}`) || !strings.Contains(body, `"zone": "eu-1"`) {
		t.Errorf("a replica's labels must be an object, {} for none: %s", body)
	}
	if r := got.Replicas[1]; r.Owner != "replica-b" || r.PID != 202 || len(r.Running) != 1 || r.Offset == nil {
		t.Errorf("replicas[1] = %+v", r)
	}
	empty := serve(t, newMemSource(), web.Options{})
	if _, body, _ := call(t, "GET", empty.URL+"/api/jobs", ""); !strings.Contains(body, `"jobs": []`) {
		t.Errorf("no jobs must be [], not null: %s", body)
	}
}

func TestAPIUnknownJobIs404(t *testing.T) {
	srv := serve(t, fixture(), web.Options{AdminToken: adminToken})
	for _, c := range []struct{ method, path string }{
		{"GET", "/api/jobs/nope"}, {"GET", "/api/jobs/nope/runs"}, {"GET", "/jobs/nope"},
		{"POST", "/api/jobs/nope/trigger"}, {"POST", "/api/jobs/backup/explode"},
	} {
		if code, body, _ := call(t, c.method, srv.URL+c.path, adminToken); code != http.StatusNotFound {
			t.Errorf("%s %s: %d, want 404: %s", c.method, c.path, code, body)
		}
	}
}

func TestActionsNeedTheAdminToken(t *testing.T) {
	src := fixture()
	srv := serve(t, src, web.Options{AdminToken: adminToken})
	for _, tok := range []string{"", "wrong", adminToken + "x", strings.ToUpper(adminToken)} {
		for _, a := range []string{"trigger", "suspend", "resume"} {
			code, body, _ := call(t, "POST", srv.URL+"/api/jobs/backup/"+a, tok)
			if code != http.StatusForbidden || !strings.Contains(body, "Authorization: Bearer") {
				t.Errorf("POST %s with token %q: %d %s, want 403 naming the header", a, tok, code, body)
			}
		}
	}
	if n := src.totalCalls(); n != 0 {
		t.Fatalf("refused actions reached the source %d times", n)
	}
	code, body, _ := call(t, "POST", srv.URL+"/api/jobs/backup/suspend", adminToken)
	if code != 200 || !src.suspended("backup") || !strings.Contains(body, `"ok": true`) {
		t.Fatalf("suspend with the token: %d %s, suspended=%v", code, body, src.suspended("backup"))
	}
	if code, _, _ = call(t, "POST", srv.URL+"/api/jobs/backup/resume", adminToken); code != 200 || src.suspended("backup") {
		t.Fatalf("resume with the token: %d, suspended=%v", code, src.suspended("backup"))
	}
	if code, _, _ = call(t, "POST", srv.URL+"/api/jobs/backup/trigger", adminToken); code != 200 || src.count("trigger backup") != 1 {
		t.Fatalf("trigger with the token: %d, triggers=%d", code, src.count("trigger backup"))
	}
}

func TestNoAdminTokenMeansNoActions(t *testing.T) {
	src := fixture()
	srv := serve(t, src, web.Options{})
	for _, tok := range []string{"", "anything"} {
		if code, _, _ := call(t, "POST", srv.URL+"/api/jobs/backup/suspend", tok); code != http.StatusNotFound {
			t.Errorf("POST suspend without a configured token (sent %q): %d, want 404", tok, code)
		}
	}
	_, page, _ := call(t, "GET", srv.URL+"/", "")
	if strings.Contains(page, "data-action") || strings.Contains(page, `id="token"`) {
		t.Error("a read-only page shows action buttons or a token field")
	}
	if src.totalCalls() != 0 {
		t.Fatal("an action reached the source")
	}
}

// TestGETNeverChangesAnything sends GET (and HEAD) to every route, the
// action routes included, with the admin token, and checks that no action
// reached the source.
func TestGETNeverChangesAnything(t *testing.T) {
	src := fixture()
	srv := serve(t, src, web.Options{AdminToken: adminToken})
	paths := []string{"/", "/jobs/backup", "/api/jobs", "/api/jobs/backup", "/api/jobs/backup/runs", "/api/replicas",
		"/static/app.js", "/static/app.css"}
	for _, a := range []string{"trigger", "suspend", "resume"} {
		paths = append(paths, "/api/jobs/backup/"+a, "/api/jobs/backup/"+a+"?token="+adminToken)
	}
	for _, method := range []string{"GET", "HEAD"} {
		for _, p := range paths {
			code, _, _ := call(t, method, srv.URL+p, adminToken)
			isAction := strings.Contains(p, "/trigger") || strings.Contains(p, "/suspend") || strings.Contains(p, "/resume")
			if isAction && code != http.StatusMethodNotAllowed {
				t.Errorf("%s %s: %d, want 405", method, p, code)
			}
			if !isAction && code != http.StatusOK {
				t.Errorf("%s %s: %d, want 200", method, p, code)
			}
		}
	}
	if n := src.totalCalls(); n != 0 || src.suspended("backup") {
		t.Fatalf("GET requests changed state: %d actions, suspended=%v", n, src.suspended("backup"))
	}
}

func TestPagesEscapeJobDataAndForbidInlineScript(t *testing.T) {
	srv := serve(t, fixture(), web.Options{})
	code, page, h := call(t, "GET", srv.URL+"/jobs/evil", "")
	if code != 200 {
		t.Fatalf("GET /jobs/evil: %d", code)
	}
	if strings.Contains(page, "<script>window") || strings.Contains(page, "<img src=x") {
		t.Fatalf("job output reached the page as markup:\n%s", page)
	}
	if !strings.Contains(page, "&lt;script&gt;window.__pwned=1&lt;/script&gt;") {
		t.Fatalf("job output is not shown escaped:\n%s", page)
	}
	csp := h.Get("Content-Security-Policy")
	if !strings.Contains(csp, "default-src 'self'") || strings.Contains(csp, "unsafe-inline") {
		t.Fatalf("Content-Security-Policy = %q", csp)
	}
	if h.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatal("X-Content-Type-Options: nosniff missing")
	}
	// The page's own markup must not need what the CSP blocks.
	if strings.Contains(page, "<script>") || strings.Contains(page, ` style="`) || strings.Contains(page, ` onclick="`) {
		t.Fatal("the page has inline script, style or handlers, which the CSP blocks")
	}
}

func TestPageAssetsAreEmbedded(t *testing.T) {
	srv := serve(t, newMemSource(), web.Options{})
	_, page, _ := call(t, "GET", srv.URL+"/", "")
	for _, want := range []string{`<meta name="viewport" content="width=device-width, initial-scale=1">`,
		`src="/static/app.js"`, `href="/static/app.css"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(page, "http://") || strings.Contains(page, "https://") {
		t.Error("page refers to an external URL; it must work air-gapped")
	}
	for _, p := range []string{"/static/app.js", "/static/app.css"} {
		if code, body, _ := call(t, "GET", srv.URL+p, ""); code != 200 || len(body) < 100 {
			t.Errorf("GET %s: %d, %d bytes", p, code, len(body))
		}
	}
}
