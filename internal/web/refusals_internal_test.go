package web

import (
	"bytes"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// TestRefusalLogLimits: one line per address per minute, counting the
// refusals in between; the map never holds more than maxRefusalClients,
// and addresses past it share one line a minute.
func TestRefusalLogLimits(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := newRefusalLog(zerolog.New(&buf), func() time.Time { return now })
	req := func(addr string) {
		r := httptest.NewRequest("GET", "/api/jobs", nil)
		r.RemoteAddr = addr
		l.Refused(r, "test")
	}
	for i := range 10 {
		req(fmt.Sprintf("10.0.0.1:%d", 1000+i))
	}
	now = now.Add(refusalLogEvery)
	req("10.0.0.1:2000")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], `"refused_since_last_line":9`) {
		t.Fatalf("want 2 lines, the second counting 9:\n%s", buf.String())
	}
	buf.Reset()
	for i := range 3 * maxRefusalClients {
		req(fmt.Sprintf("[2001:db8::%x]:443", i))
	}
	if n := len(l.clients); n > maxRefusalClients {
		t.Fatalf("%d addresses remembered, cap %d", n, maxRefusalClients)
	}
	got := strings.Count(buf.String(), "\n")
	// 10.0.0.1 is still remembered, and the last slot is the shared line's.
	if want := maxRefusalClients - 1; got != want {
		t.Fatalf("%d lines for %d addresses in a minute, want %d", got, 3*maxRefusalClients, want)
	}
	if !strings.Contains(buf.String(), `"client":"others"`) {
		t.Fatal("no shared line for the addresses past the cap")
	}
}
