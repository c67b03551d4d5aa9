package web_test

import (
	"github.com/cronlock/cronlock/internal/testlog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/web"
)

const readToken = "r3ad-token-0123456789abcdef"

// noRedirect is a client that shows redirects instead of following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// login posts the form with tok (and extra headers) and returns the response.
func login(t *testing.T, base, tok string, hdr map[string]string) *http.Response {
	t.Helper()
	form := url.Values{"token": {tok}, "next": {"/jobs/backup"}}
	req, err := http.NewRequest("POST", base+"/login", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// withCookie GETs path with the cookie c and returns the status.
func withCookie(t *testing.T, base, path string, c *http.Cookie) int {
	t.Helper()
	req, _ := http.NewRequest("GET", base+path, nil)
	req.AddCookie(c)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestReadTokenClosesPageAPIAndMetrics: with a read token, every read route
// (and /metrics) answers 401 without it, 200 with it or the admin token as
// a bearer token; the assets stay open.
func TestReadTokenClosesPageAPIAndMetrics(t *testing.T) {
	t.Parallel()
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("cronlock_up 1\n")) })
	srv := serve(t, fixture(), web.Options{AdminToken: adminToken, ReadToken: readToken, Metrics: metrics})
	for _, p := range []string{"/", "/jobs/backup", "/api/jobs", "/api/jobs/backup", "/api/jobs/backup/runs", "/api/replicas", "/metrics"} {
		for _, tok := range []string{"", "wrong", readToken + "x"} {
			code, body, h := call(t, "GET", srv.URL+p, tok)
			if code != http.StatusUnauthorized || h.Get("WWW-Authenticate") == "" {
				t.Errorf("GET %s with %q: %d, want 401 with WWW-Authenticate", p, tok, code)
			}
			if strings.Contains(body, "replica-b") || strings.Contains(body, "cronlock_up") {
				t.Errorf("GET %s with %q: the refusal shows data: %s", p, tok, body)
			}
			if isPage := !strings.HasPrefix(p, "/api/") && p != "/metrics"; isPage && !strings.Contains(body, `name="token"`) {
				t.Errorf("GET %s: the 401 page has no login form:\n%s", p, body)
			}
		}
		for _, tok := range []string{readToken, adminToken} {
			if code, body, _ := call(t, "GET", srv.URL+p, tok); code != http.StatusOK {
				t.Errorf("GET %s with a good token: %d %s", p, code, body)
			}
		}
	}
	for _, p := range []string{"/static/app.js", "/static/app.css"} {
		if code, _, _ := call(t, "GET", srv.URL+p, ""); code != http.StatusOK {
			t.Errorf("GET %s without a token: %d, want 200", p, code)
		}
	}
	// The read token is not an admin token.
	if code, _, _ := call(t, "POST", srv.URL+"/api/jobs/backup/suspend", readToken); code != http.StatusForbidden {
		t.Errorf("suspend with the read token: %d, want 403", code)
	}
}

// TestLoginCookie: the form sets an HttpOnly, SameSite=Strict cookie that
// grants reading, not actions, stops working when the token changes, and is
// refused from another site.
func TestLoginCookie(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	tokens := web.Tokens{Admin: adminToken, Read: readToken}
	src := fixture()
	srv := serve(t, src, web.Options{Tokens: func() web.Tokens { mu.Lock(); defer mu.Unlock(); return tokens }})

	if resp := login(t, srv.URL, "wrong", nil); resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
		t.Fatalf("login with a wrong token: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	for _, h := range []map[string]string{{"Origin": "https://evil.example"}, {"Sec-Fetch-Site": "cross-site"}} {
		if resp := login(t, srv.URL, readToken, h); resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
			t.Errorf("cross-site login %v: %d, cookies %v", h, resp.StatusCode, resp.Cookies())
		}
	}
	resp := login(t, srv.URL, readToken, map[string]string{"Origin": srv.URL, "Sec-Fetch-Site": "same-origin"})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/jobs/backup" || len(resp.Cookies()) != 1 {
		t.Fatalf("login: %d to %q, cookies %v", resp.StatusCode, resp.Header.Get("Location"), resp.Cookies())
	}
	c := resp.Cookies()[0]
	if c.Name != web.ReadCookie || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || strings.Contains(c.Value, readToken) {
		t.Fatalf("cookie %+v: want %s, HttpOnly, SameSite=Strict, not the token itself", c, web.ReadCookie)
	}
	for _, p := range []string{"/", "/api/jobs"} {
		if code := withCookie(t, srv.URL, p, c); code != http.StatusOK {
			t.Errorf("GET %s with the cookie: %d", p, code)
		}
	}
	req, _ := http.NewRequest("POST", srv.URL+"/api/jobs/backup/suspend", nil)
	req.AddCookie(c)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden || src.totalCalls() != 0 {
		t.Fatalf("action with only the read cookie: %v %v, calls %d", resp, err, src.totalCalls())
	}
	mu.Lock()
	tokens.Read = readToken + "-rotated"
	mu.Unlock()
	if code := withCookie(t, srv.URL, "/api/jobs", c); code != http.StatusUnauthorized {
		t.Errorf("cookie of the old read token: %d, want 401", code)
	}
	// Only local paths after a login.
	form := url.Values{"token": {adminToken}, "next": {"//evil.example/x"}}
	r2, err := noRedirect.PostForm(srv.URL+"/login", form)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != http.StatusSeeOther || r2.Header.Get("Location") != "/" {
		t.Errorf("login with next //evil.example/x: %d to %q, want / ", r2.StatusCode, r2.Header.Get("Location"))
	}
}

// TestRefusalsLoggedOncePerClient: many refused requests from one client
// give one warn line with its address.
func TestRefusalsLoggedOncePerClient(t *testing.T) {
	t.Parallel()
	var buf testlog.Buffer
	srv := serve(t, fixture(), web.Options{AdminToken: adminToken, ReadToken: readToken, Logger: zerolog.New(&buf)})
	for range 5 {
		call(t, "GET", srv.URL+"/api/jobs", "wrong")
		call(t, "POST", srv.URL+"/api/jobs/backup/trigger", readToken)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], `"level":"warn"`) || !strings.Contains(lines[0], `"client":"127.0.0.1"`) ||
		!strings.Contains(lines[0], `"reason":"read without the read token"`) {
		t.Fatalf("want one warn line naming the client, got %d:\n%s", len(lines), buf.String())
	}
	if strings.Contains(buf.String(), readToken) || strings.Contains(buf.String(), "wrong") {
		t.Fatalf("the refusal line shows a token:\n%s", buf.String())
	}
}
