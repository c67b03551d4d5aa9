package notify

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/cronlock/cronlock/internal/config"
	"github.com/cronlock/cronlock/scheduler"
)

// A receiver that echoes the request (headers, a control sequence, a long
// body) with a 500: the log has the status and a short inert snippet in
// which the configured header values, the HMAC secret and the URL's
// credential are masked.
func TestWebhookErrorResponseIsMaskedAndShort(t *testing.T) {
	t.Parallel()
	const (
		token  = "Bearer tok-4f9a1c77e2"
		apiKey = "key-0123456789"
		secret = "hmac-secret-b7d2"
		pass   = "url-pass-91ab"
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		var keys []string
		for k := range r.Header {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintf(w, "\x1b[31mbad\r ")
		for _, k := range keys {
			fmt.Fprintf(w, "%s: %s\n", k, r.Header.Get(k))
		}
		fmt.Fprintf(w, "secret=%s token-alone=%s password=%s auth=%s %s", secret, strings.Fields(token)[1], pass,
			r.Header.Get("Authorization"), strings.Repeat("x", 1000))
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	u.User = url.UserPassword("me", pass)
	f := newFixture(t, Options{Retries: -1}, config.NotifyTarget{
		Webhook: config.Secret(u.String()),
		Secret:  secret,
		Headers: map[string]config.Secret{"Authorization": token, "X-Api-Key": apiKey},
	})
	f.Notify(testRun(scheduler.StatusFailed), "")
	f.close(t)
	var line struct{ Error string }
	for l := range strings.SplitSeq(strings.TrimSpace(f.log.String()), "\n") {
		if strings.Contains(l, "not delivered") {
			if err := json.Unmarshal([]byte(l), &line); err != nil {
				t.Fatal(err)
			}
		}
	}
	msg := line.Error
	for _, s := range []string{token, "tok-4f9a1c77e2", apiKey, secret, pass, "\x1b", "\r"} {
		if strings.Contains(f.log.String(), s) || strings.Contains(msg, s) {
			t.Errorf("the log holds %q: %q", s, msg)
		}
	}
	if !strings.HasPrefix(msg, "HTTP 500 Internal Server Error: ") || !strings.Contains(msg, "***") ||
		!strings.Contains(msg, "\uFFFD[31mbad") || len(msg) > 300 || !strings.Contains(msg, "…") {
		t.Errorf("error %q (%d bytes): want the status, then a short snippet, inert, secrets masked", msg, len(msg))
	}
}

func TestMaskerLeavesNoPartOfASecretAtTheCut(t *testing.T) {
	t.Parallel()
	m := newMasker("abcdefghij")
	if got := m.snippet([]byte("hello abcde"), true); got != "hello" {
		t.Errorf("snippet of a text cut inside a secret = %q, want %q", got, "hello")
	}
	if got := m.snippet([]byte("hello abcde"), false); got != "hello abcde" {
		t.Errorf("snippet of a whole text = %q, want it as it is (no secret in it)", got)
	}
}
