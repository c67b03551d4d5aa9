package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
)

const runtimeToken = "runtime-test-token-0123456789abcdef"

// runtimeConfig is a replica's config with runtime jobs on, no file job but
// one (a file job's name is refused to runtime jobs), and a kind that
// appends "job tick owner payload" to out.
func runtimeConfig(t *testing.T, dir, url, owner, out string) string {
	t.Helper()
	return writeFile(t, dir, owner+".yaml", fmt.Sprintf(`
nats: {url: %s}
lock: {lease: 2s, renew: 500ms, owner: %s}
http: {listen: "127.0.0.1:0", admin_token: %s}
shutdown_grace: 2s
runtime_jobs: {enabled: true}
kinds:
  - name: append
    env: {OUT: %q}
    shell: 'echo "$CRONLOCK_JOB $CRONLOCK_TICK $CRONLOCK_OWNER $CRONLOCK_PAYLOAD" >> "$OUT"'
jobs:
  - name: file.job
    schedule: "@yearly"
    shell: "true"
`, url, owner, runtimeToken, out))
}

// request sends an API request with the admin token (unless token is "")
// and returns the status, the body and the ETag.
func request(t *testing.T, method, url, token string, body string, header map[string]string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header.Get("ETag")
}

// Runtime jobs on three replicas of the built binary: a put through one
// replica's API is seen by all three and its ticks run exactly once, with
// the payload; what is refused is refused with the reason (no token, a bad
// schedule naming its field, a file job's name, a stale If-Match); a delete
// stops it everywhere; the revisions say who did what.
func TestRuntimeJobsOnThreeReplicas(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	dir := t.TempDir()
	out := filepath.Join(dir, "runs")
	var bases []string
	var ds []*daemon
	for _, owner := range []string{"r1", "r2", "r3"} {
		d := startDaemon(t, dir, runtimeConfig(t, dir, url, owner, out))
		ds = append(ds, d)
		bases = append(bases, httpBase(t, d))
	}
	running(ds...)
	api := bases[0] + "/api/jobs/"
	def := `{"name": "acme.report", "schedule": "* * * * * *", "kind": "append", "payload": {"tenant": "acme"}}`

	if code, body, _ := request(t, "PUT", api+"acme.report", "", def, nil); code != http.StatusForbidden {
		t.Errorf("PUT without the token = %d %s, want 403", code, body)
	}
	code, body, _ := request(t, "PUT", api+"acme.report", runtimeToken, strings.Replace(def, "* * * * * *", "61 * * * *", 1), nil)
	var bad struct{ Error, Field string }
	if json.Unmarshal([]byte(body), &bad); code != http.StatusBadRequest || bad.Field != "schedule" {
		t.Errorf("PUT of a bad schedule = %d %s, want 400 naming the field schedule", code, body)
	}
	if code, body, _ := request(t, "PUT", api+"file.job", runtimeToken, strings.Replace(def, "acme.report", "file.job", 1), nil); code != http.StatusConflict {
		t.Errorf("PUT of a file job's name = %d %s, want 409", code, body)
	}

	put := time.Now()
	code, body, tag := request(t, "PUT", api+"acme.report", runtimeToken, def, map[string]string{"X-Cronlock-Actor": "alice"})
	if code != http.StatusOK || tag == "" {
		t.Fatalf("PUT = %d %s (ETag %q), want 200 with an ETag", code, body, tag)
	}
	for i, base := range bases {
		waitFor(t, 10*time.Second, fmt.Sprintf("replica r%d to have the job", i+1), func() bool {
			code, body := fetch(base + "/api/jobs/acme.report")
			return code == 200 && strings.Contains(body, `"source": "runtime"`) && strings.Contains(body, `"revision"`)
		})
	}
	t.Logf("put seen by all three replicas within %v", time.Since(put))
	waitFor(t, 20*time.Second, "four runs", func() bool { return len(fileLines(t, out)) >= 4 })

	code, body, tag2 := request(t, "PUT", api+"acme.report", runtimeToken, def, map[string]string{"If-Match": tag})
	if code != http.StatusOK || tag2 == tag {
		t.Fatalf("PUT with the current If-Match = %d %s (ETag %s after %s), want 200 and a new ETag", code, body, tag2, tag)
	}
	if code, body, _ := request(t, "PUT", api+"acme.report", runtimeToken, def, map[string]string{"If-Match": tag}); code != http.StatusPreconditionFailed {
		t.Errorf("PUT with a stale If-Match = %d %s, want 412", code, body)
	}
	tag = tag2
	if code, body, _ := request(t, "DELETE", api+"acme.report", runtimeToken, "", map[string]string{"If-Match": tag, "X-Cronlock-Actor": "bob"}); code != http.StatusOK {
		t.Fatalf("DELETE = %d %s", code, body)
	}
	for i, base := range bases {
		waitFor(t, 10*time.Second, fmt.Sprintf("replica r%d to drop the job", i+1), func() bool {
			code, _ := fetch(base + "/api/jobs/acme.report")
			return code == 404
		})
	}
	// Every replica has dropped the job: no tick after this starts. A run
	// of an earlier tick may still be writing its line; none of a later
	// tick may appear in the next two seconds.
	dropped := time.Now()
	time.Sleep(2 * time.Second)
	ticks := map[string]int{}
	for _, l := range fileLines(t, out) {
		f := strings.Fields(l)
		if len(f) != 4 || f[0] != "acme.report" || f[3] != `{"tenant":"acme"}` {
			t.Fatalf("run line %q, want job, tick, owner and the payload", l)
		}
		if ticks[f[1]]++; ticks[f[1]] > 1 {
			t.Errorf("tick %s ran %d times", f[1], ticks[f[1]])
		}
		if tick, err := time.Parse(time.RFC3339, f[1]); err != nil || tick.After(dropped) {
			t.Errorf("tick %s ran after every replica had dropped the job (%v)", f[1], dropped.UTC())
		}
	}
	_, body, _ = request(t, "GET", api+"acme.report/revisions", "", "", nil)
	var revs struct {
		Revisions []struct{ Operation, By string }
	}
	if err := json.Unmarshal([]byte(body), &revs); err != nil || len(revs.Revisions) != 3 ||
		revs.Revisions[0].By != "alice" || revs.Revisions[1].By != "api" || revs.Revisions[2].Operation != "delete" || revs.Revisions[2].By != "bob" {
		t.Errorf("revisions = %s, want alice's put, the API's and bob's delete", body)
	}
}

// Paging GET /api/jobs?source=runtime&limit=&after=.
func TestRuntimeJobsList(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	dir := t.TempDir()
	d := startDaemon(t, dir, runtimeConfig(t, dir, url, "r1", filepath.Join(dir, "runs")))
	base := httpBase(t, d)
	running(d)
	for _, n := range []string{"c", "a", "b"} {
		def := fmt.Sprintf(`{"name": %q, "schedule": "@yearly", "kind": "append"}`, n)
		if code, body, _ := request(t, "PUT", base+"/api/jobs/"+n, runtimeToken, def, nil); code != 200 {
			t.Fatalf("PUT %s = %d %s", n, code, body)
		}
	}
	var page struct {
		Jobs      []struct{ Name, Source string }
		NextAfter string `json:"next_after"`
	}
	waitFor(t, 10*time.Second, "three runtime jobs", func() bool {
		_, body := fetch(base + "/api/jobs?source=runtime")
		return strings.Count(body, `"source": "runtime"`) == 3
	})
	var names []string
	for after := ""; ; {
		_, body := fetch(base + "/api/jobs?source=runtime&limit=2&after=" + after)
		page.NextAfter = ""
		if err := json.NewDecoder(bytes.NewReader([]byte(body))).Decode(&page); err != nil {
			t.Fatal(err)
		}
		for _, j := range page.Jobs {
			names = append(names, j.Name)
		}
		if after = page.NextAfter; after == "" {
			break
		}
	}
	if strings.Join(names, ",") != "a,b,c" {
		t.Errorf("paged runtime jobs = %v, want a,b,c", names)
	}

	// A one-off past its instant (kept) has no next run and says it ended.
	def := `{"name": "past", "at": "2026-01-02T03:04:05Z", "after_run": "keep", "kind": "append"}`
	if code, body, _ := request(t, "PUT", base+"/api/jobs/past", runtimeToken, def, nil); code != 200 {
		t.Fatalf("PUT past = %d %s", code, body)
	}
	waitFor(t, 10*time.Second, "the past one-off shown as ended", func() bool {
		code, body := fetch(base + "/api/jobs/past")
		return code == 200 && strings.Contains(body, `"ended": "2026-01-02T03:04:05Z"`) && !strings.Contains(body, `"next"`)
	})
}

// A runtime one-off (at) on two replicas runs once, then its definition is
// deleted (after_run: delete, the runtime default) by the replica that ran
// it; its run history stays.
func TestRuntimeOneOffDeletesItself(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	dir := t.TempDir()
	out := filepath.Join(dir, "runs")
	var bases []string
	var ds []*daemon
	for _, owner := range []string{"r1", "r2"} {
		d := startDaemon(t, dir, runtimeConfig(t, dir, url, owner, out))
		ds = append(ds, d)
		bases = append(bases, httpBase(t, d))
	}
	running(ds...)
	at := time.Now().Add(3 * time.Second).Truncate(time.Second).UTC().Format(time.RFC3339)
	def := fmt.Sprintf(`{"name": "remind.acme", "at": %q, "kind": "append", "payload": {"to": "acme"}}`, at)
	if code, body, _ := request(t, "PUT", bases[0]+"/api/jobs/remind.acme", runtimeToken, def, nil); code != 200 {
		t.Fatalf("PUT = %d %s", code, body)
	}
	waitFor(t, 20*time.Second, "the one-off's run", func() bool { return len(fileLines(t, out)) >= 1 })
	for i, base := range bases {
		waitFor(t, 10*time.Second, fmt.Sprintf("replica r%d to drop the one-off", i+1), func() bool {
			code, _ := fetch(base + "/api/jobs/remind.acme")
			return code == 404
		})
	}
	_, body, _ := request(t, "GET", bases[1]+"/api/jobs/remind.acme/revisions", "", "", nil)
	if !strings.Contains(body, `"operation": "delete"`) || !strings.Contains(body, "after_run: delete") {
		t.Errorf("revisions = %s, want the delete by after_run", body)
	}
	if runs := fileLines(t, out); len(runs) != 1 || !strings.HasPrefix(runs[0], "remind.acme "+at) {
		t.Errorf("runs = %q, want one, of %s", runs, at)
	}
	kv, err := jetStreamAt(t, url).KeyValue(t.Context(), "cronlock_history")
	if err != nil {
		t.Fatal(err)
	}
	if e, err := kv.Get(t.Context(), "remind.acme"); err != nil || !strings.Contains(string(e.Value()), `"succeeded"`) {
		t.Errorf("the one-off's history after the delete: %v %v, want its succeeded run", e, err)
	}
}
