package notify

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/config"
	"github.com/cronlock/cronlock/scheduler"
)

// received is one request a hookServer got.
type received struct {
	method string
	header http.Header
	body   []byte
}

// hookServer is a real HTTP server that records requests and answers the
// i-th one with statuses[i] (200 once they run out).
type hookServer struct {
	*httptest.Server
	mu       sync.Mutex
	got      []received
	statuses []int
}

func newHookServer(t *testing.T, statuses ...int) *hookServer {
	t.Helper()
	s := &hookServer{statuses: statuses}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		status := http.StatusOK
		if i := len(s.got); i < len(s.statuses) {
			status = s.statuses[i]
		}
		s.got = append(s.got, received{r.Method, r.Header.Clone(), body})
		s.mu.Unlock()
		if status >= 300 && status < 400 {
			w.Header().Set("Location", "/elsewhere")
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, http.StatusText(status))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *hookServer) requests() []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]received(nil), s.got...)
}

func TestWebhookDeliversSignedJSON(t *testing.T) {
	t.Parallel()
	srv := newHookServer(t)
	const key = "s3cret-key"
	f := newFixture(t, Options{}, config.NotifyTarget{
		Webhook: config.Secret(srv.URL + "/hooks/T0/path-token"),
		Headers: map[string]config.Secret{"authorization": "Bearer abc", "X-Team": "ops"},
		Secret:  key,
	})
	f.Notify(testRun(scheduler.StatusFailed), scheduler.StatusSucceeded)
	f.close(t)

	got := srv.requests()
	if len(got) != 1 {
		t.Fatalf("got %d requests, want 1", len(got))
	}
	r := got[0]
	if r.method != http.MethodPost || r.header.Get("Content-Type") != "application/json" {
		t.Errorf("method %s, Content-Type %q", r.method, r.header.Get("Content-Type"))
	}
	if r.header.Get("Authorization") != "Bearer abc" || r.header.Get("X-Team") != "ops" {
		t.Errorf("configured headers missing: %v", r.header)
	}
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write(r.body)
	want := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	if sig := r.header.Get("X-Cronlock-Signature"); !hmac.Equal([]byte(sig), []byte(want)) {
		t.Errorf("X-Cronlock-Signature = %q, want %q", sig, want)
	}
	var p Payload
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatalf("body %s: %v", r.body, err)
	}
	if p.Event != EventFailure || p.Job != "backup" || p.Status != "failed" || p.Token != 42 || p.DurationSeconds != 1.5 {
		t.Errorf("payload = %+v", p)
	}
	f.wantCounters(t, 1, 0)
	if strings.Contains(f.log.String(), "path-token") || strings.Contains(f.log.String(), "Bearer") {
		t.Errorf("log shows a secret:\n%s", f.log)
	}
}

func TestWebhookWithoutSecretIsNotSigned(t *testing.T) {
	t.Parallel()
	srv := newHookServer(t)
	f := newFixture(t, Options{}, config.NotifyTarget{Webhook: config.Secret(srv.URL)})
	f.Notify(testRun(scheduler.StatusMissed), "")
	f.close(t)
	got := srv.requests()
	if len(got) != 1 {
		t.Fatalf("got %d requests, want 1", len(got))
	}
	if _, ok := got[0].header["X-Cronlock-Signature"]; ok {
		t.Errorf("unsigned target sent X-Cronlock-Signature")
	}
}

func TestWebhookRetriesServerErrorsThenSucceeds(t *testing.T) {
	t.Parallel()
	srv := newHookServer(t, http.StatusServiceUnavailable, http.StatusTooManyRequests, http.StatusInternalServerError)
	f := newFixture(t, Options{}, config.NotifyTarget{Webhook: config.Secret(srv.URL)})
	f.Notify(testRun(scheduler.StatusFailed), "")
	f.close(t)
	got := srv.requests()
	if len(got) != 4 {
		t.Fatalf("got %d requests, want 4 (1 + 3 retries)\nlog:\n%s", len(got), f.log)
	}
	for _, r := range got[1:] {
		if string(r.body) != string(got[0].body) || r.header.Get("X-Cronlock-Signature") != got[0].header.Get("X-Cronlock-Signature") {
			t.Errorf("a retry sent a different request")
		}
	}
	f.wantCounters(t, 1, 0)
}

func TestWebhookGivesUpAfterRetries(t *testing.T) {
	t.Parallel()
	srv := newHookServer(t, 502, 502, 502, 502, 502, 502)
	f := newFixture(t, Options{Retries: 2}, config.NotifyTarget{Webhook: config.Secret(srv.URL)})
	f.Notify(testRun(scheduler.StatusFailed), "")
	f.close(t)
	if n := len(srv.requests()); n != 3 {
		t.Errorf("got %d requests, want 3 (1 + 2 retries)", n)
	}
	f.wantCounters(t, 0, 1)
	if !strings.Contains(f.log.String(), "502 Bad Gateway") {
		t.Errorf("log does not say why:\n%s", f.log)
	}
}

func TestWebhookDoesNotRetryClientErrorsOrRedirects(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound, http.StatusFound, http.StatusPermanentRedirect} {
		srv := newHookServer(t, status, status, status, status)
		f := newFixture(t, Options{}, config.NotifyTarget{Webhook: config.Secret(srv.URL)})
		f.Notify(testRun(scheduler.StatusFailed), "")
		f.close(t)
		if n := len(srv.requests()); n != 1 {
			t.Errorf("status %d: got %d requests, want 1 (no retry, no redirect)", status, n)
		}
		f.wantCounters(t, 0, 1)
	}
}

func TestWebhookRetriesConnectionErrors(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL + "/secret-path"
	srv.Close() // nothing listens there any more
	f := newFixture(t, Options{Retries: 2}, config.NotifyTarget{Webhook: config.Secret(url)})
	f.Notify(testRun(scheduler.StatusFailed), "")
	f.close(t)
	f.wantCounters(t, 0, 1)
	log := f.log.String()
	if strings.Count(log, "retrying") != 2 || !strings.Contains(log, "connection refused") {
		t.Errorf("want 2 retries of a refused connection, log:\n%s", log)
	}
	if strings.Contains(log, "secret-path") {
		t.Errorf("log shows the webhook URL:\n%s", log)
	}
}

// hangingServer accepts requests and answers none until the client gives up
// or the test ends.
func hangingServer(t *testing.T) (*httptest.Server, func() int) {
	t.Helper()
	var mu sync.Mutex
	hits := 0
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	return srv, func() int { mu.Lock(); defer mu.Unlock(); return hits }
}

func TestWebhookTimeout(t *testing.T) {
	t.Parallel()
	srv, hits := hangingServer(t)
	timeout := 200 * time.Millisecond
	f := newFixture(t, Options{Timeout: timeout, Retries: 1}, config.NotifyTarget{Webhook: config.Secret(srv.URL)})
	start := time.Now()
	f.Notify(testRun(scheduler.StatusFailed), "")
	f.close(t)
	if hits() != 2 {
		t.Errorf("got %d requests, want 2 (a timed-out attempt is retried)", hits())
	}
	if took := time.Since(start); took < 2*timeout {
		t.Errorf("gave up after %v, before two timeouts of %v", took, timeout)
	}
	f.wantCounters(t, 0, 1)
	if !strings.Contains(f.log.String(), "timed out after 200ms") {
		t.Errorf("log does not report the timeout:\n%s", f.log)
	}
}

// TestNotifyDoesNotBlock checks that a hanging endpoint delays neither
// Notify nor the deliveries to other targets.
func TestNotifyDoesNotBlock(t *testing.T) {
	t.Parallel()
	hang, _ := hangingServer(t)
	ok := newHookServer(t)
	f := newFixture(t, Options{Workers: 2, Timeout: time.Minute},
		config.NotifyTarget{Webhook: config.Secret(hang.URL), On: []string{EventFailure}},
		config.NotifyTarget{Webhook: config.Secret(ok.URL), On: []string{EventFailure}})
	const calls = 20
	start := time.Now()
	for range calls {
		f.Notify(testRun(scheduler.StatusFailed), "")
	}
	if took := time.Since(start); took > 50*time.Millisecond {
		t.Errorf("%d Notify calls took %v with a hanging endpoint, want < 50ms", calls, took)
	}
	// The hanging endpoint holds one worker; the other one delivers to the
	// healthy endpoint, which receives its first request long before the
	// hanging one times out.
	deadline := time.Now().Add(closeTimeout)
	for len(ok.requests()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if len(ok.requests()) == 0 {
		t.Errorf("the healthy endpoint got nothing while the other one hung")
	}
}

func TestFullQueueDrops(t *testing.T) {
	t.Parallel()
	hang, _ := hangingServer(t)
	f := newFixture(t, Options{Workers: 1, QueueSize: 2, Timeout: time.Minute},
		config.NotifyTarget{Webhook: config.Secret(hang.URL)})
	const calls = 10
	for range calls {
		f.Notify(testRun(scheduler.StatusFailed), "")
	}
	// One delivery may be taken by the worker, two wait in the queue: at
	// least calls-3 are dropped at once.
	if got := f.counter(t, "cronlock_notifications_failed_total"); got < calls-3 || got > calls-2 {
		t.Errorf("failed = %v right after %d calls into a queue of 2, want %d or %d", got, calls, calls-3, calls-2)
	}
	if !strings.Contains(f.log.String(), "queue full") {
		t.Errorf("log does not say the queue is full:\n%s", f.log)
	}
}

// TestCloseAbortsAtDeadline checks that Close gives up on a hanging
// delivery when its context ends, and that later notifications are dropped.
func TestCloseAbortsAtDeadline(t *testing.T) {
	t.Parallel()
	hang, hits := hangingServer(t)
	f := newFixture(t, Options{Timeout: time.Minute}, config.NotifyTarget{Webhook: config.Secret(hang.URL)})
	f.Notify(testRun(scheduler.StatusFailed), "")
	deadline := time.Now().Add(closeTimeout)
	for hits() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := f.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close = %v, want context.DeadlineExceeded", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Close took %v after its deadline", took)
	}
	if hits() != 1 {
		t.Errorf("got %d requests, want 1 (no retry after Close gave up)", hits())
	}
	f.Notify(testRun(scheduler.StatusFailed), "")
	f.wantCounters(t, 0, 2)
}
