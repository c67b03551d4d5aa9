package app_test

import (
	"encoding/json"
	"github.com/cronlock/cronlock/internal/replicatest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/internal/webtest"
	"github.com/cronlock/cronlock/scheduler"
)

// TestReplicasPageLeavesOutDeadReplicas: two replicas' announcements are
// left in the bucket past their TTL across a restart of the NATS server on
// the same store (as a server restarted after a crash keeps them). Neither
// /api/replicas nor the page (as served, and as the page refreshes itself)
// lists them; both show the live daemon with when it was last seen.
func TestReplicasPageLeavesOutDeadReplicas(t *testing.T) {
	t.Parallel() // mostly waiting for the announcements to age
	br := webtest.Start(t, webtest.Options{Width: 1280, Height: 800})
	srv := natstest.RunRestartable(t, natstest.Options{})
	base := webDaemon(t, srv.URL(), "replica-a")
	waitFor(t, 20*time.Second, base+"/readyz 200", func() bool { code, _ := get(t, base+"/readyz"); return code == 200 })

	dead := []string{"dead-1", "dead-2"}
	restarted := replicatest.KeepDead(t, srv, dead)

	var seen time.Time
	waitFor(t, 20*time.Second, "/api/replicas to list replica-a alone, seen since the restart", func() bool {
		code, body := get(t, base+"/api/replicas")
		var resp struct{ Replicas []map[string]any }
		if code != 200 || json.Unmarshal([]byte(body), &resp) != nil {
			return false
		}
		for _, r := range resp.Replicas {
			if slices.Contains(dead, r["owner"].(string)) {
				t.Fatalf("/api/replicas lists dead replica %v", r)
			}
		}
		if len(resp.Replicas) != 1 {
			return false
		}
		s, _ := resp.Replicas[0]["seen"].(string)
		var err error
		if seen, err = time.Parse(time.RFC3339Nano, s); err != nil || !strings.HasSuffix(s, "Z") {
			t.Fatalf("/api/replicas: seen = %q, want an RFC 3339 time in UTC", s)
		}
		return seen.After(restarted)
	})
	if age := time.Since(seen); age < 0 || age > scheduler.ReplicaTTL {
		t.Errorf("/api/replicas: seen %v ago, want within %v", age, scheduler.ReplicaTTL)
	}

	b := br.For(t)
	b.Navigate(base + "/")
	checkReplicasTable(t, b, "as served")
	b.WaitText("#updated", "live · updated", pageWait)
	checkReplicasTable(t, b, "as refreshed")
	noPageProblems(t, b)
}

// checkReplicasTable checks that the page's replicas table has a Last seen
// column, a recent time in it for replica-a, and no other row.
func checkReplicasTable(t *testing.T, b *webtest.Browser, when string) {
	t.Helper()
	b.WaitText("#replicas thead", "StartedLast seenRunning", pageWait)
	b.WaitCount("#replicas tbody tr[data-owner]", 1, pageWait)
	text, _ := b.Text(`#replicas tr[data-owner="replica-a"] .seen`)
	s, err := time.Parse("2006-01-02 15:04:05Z", text)
	if !regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ$`).MatchString(text) || err != nil ||
		time.Since(s) > scheduler.ReplicaTTL+time.Second {
		t.Errorf("page %s: replica-a last seen %q, want a time within %v", when, text, scheduler.ReplicaTTL)
	}
	if n := b.Count(`#replicas tr[data-owner^="dead-"]`); n != 0 {
		t.Errorf("page %s: %d dead replicas listed", when, n)
	}
}
