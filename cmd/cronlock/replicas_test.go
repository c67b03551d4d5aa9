package main

import (
	"encoding/json"
	"fmt"
	"github.com/cronlock/cronlock/internal/replicatest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/scheduler"
)

// TestReplicasLeaveOutDeadAfterRestart: two replicas' announcements are
// left in the bucket past their TTL across a restart of the NATS server
// on the same store (as a server restarted after a crash keeps them).
// `replicas` and `replicas --json` list only the running daemon, with when
// it was last seen: `seen` in RFC 3339 UTC, and a SEEN column.
func TestReplicasLeaveOutDeadAfterRestart(t *testing.T) {
	t.Parallel()
	srv := natstest.RunRestartable(t, natstest.Options{})
	dir := t.TempDir()
	e := &opsEnv{t: t, dir: dir, url: srv.URL(), cfg: writeFile(t, dir, "cronlock.yaml", fmt.Sprintf(`
nats: {url: %s}
lock: {lease: 4s, renew: 1s, owner: alive}
http: {listen: ""}
shutdown_grace: 2s
jobs:
  - name: yearly
    schedule: "0 0 1 1 *"
    shell: "true"
`, srv.URL()))}
	startDaemon(t, dir, e.cfg)
	listed := func() []map[string]any {
		var reps []map[string]any
		r := e.run(0, "replicas", "--json")
		if err := json.Unmarshal([]byte(r.stdout), &reps); err != nil {
			t.Fatalf("replicas --json: %v\n%s", err, r.stdout)
		}
		return reps
	}
	waitFor(t, 30*time.Second, "the daemon listed", func() bool { return len(listed()) == 1 })

	dead := []string{"dead-1", "dead-2"}
	restarted := replicatest.KeepDead(t, srv, dead)

	var seen time.Time
	waitFor(t, 20*time.Second, "the daemon listed alone, seen since the restart", func() bool {
		reps := listed()
		for _, r := range reps {
			if slices.Contains(dead, r["id"].(string)) {
				t.Fatalf("replicas --json lists dead replica %v", r)
			}
		}
		if len(reps) != 1 {
			return false
		}
		s, _ := reps[0]["seen"].(string)
		var err error
		if seen, err = time.Parse(time.RFC3339Nano, s); err != nil || !strings.HasSuffix(s, "Z") {
			t.Fatalf("replicas --json: seen = %q, want an RFC 3339 time in UTC", s)
		}
		return seen.After(restarted)
	})
	if age := time.Since(seen); age < 0 || age > scheduler.ReplicaTTL {
		t.Errorf("replicas --json: seen %v ago, want within %v", age, scheduler.ReplicaTTL)
	}

	text := e.run(0, "replicas").stdout
	lines := strings.Split(strings.TrimSpace(text), "\n")
	head := strings.Fields(lines[0])
	if i := slices.Index(head, "SEEN"); len(lines) != 2 || i < 1 || head[i-1] != "STARTED" || !strings.HasPrefix(lines[1], "alive ") {
		t.Fatalf("replicas: want a SEEN column and the daemon alone:\n%s", text)
	}
	stamps := regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`).FindAllString(lines[1], -1)
	if len(stamps) != 2 {
		t.Fatalf("replicas: want STARTED and SEEN as RFC 3339 UTC times:\n%s", text)
	}
	if s, _ := time.Parse(time.RFC3339, stamps[1]); time.Since(s) > scheduler.ReplicaTTL+time.Second {
		t.Errorf("replicas: SEEN %s is %v ago", stamps[1], time.Since(s))
	}
}
