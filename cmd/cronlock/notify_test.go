package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
)

// Notifications end to end: two replicas run a job that fails on odd
// seconds and succeeds on even ones; a command target records every
// notification. Each failure is notified exactly once across the replicas,
// with its exit code and output, and each success after a failure as
// "recovered".
func TestNotificationsOncePerResult(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes.jsonl")
	var ds []*daemon
	for _, owner := range []string{"r1", "r2"} {
		cfg := writeFile(t, dir, owner+".yaml", fmt.Sprintf(`
nats: {url: %s}
lock: {lease: 2s, renew: 500ms, owner: %s}
http: {listen: ""}
notify:
  - command: ["sh", "-c", "cat >> %s; echo >> %s"]
    on: [failure, recovered]
jobs:
  - name: flaky
    schedule: "* * * * * *"
    shell: 'echo "tick $CRONLOCK_TICK"; s=$(date -d "$CRONLOCK_TICK" +%%s); [ $((s %% 2)) -eq 0 ] || exit 3'
`, url, owner, notes, notes))
		ds = append(ds, startDaemon(t, dir, cfg))
	}
	running(ds...)
	type note struct {
		Event, Job, Status, Output string
		Tick                       time.Time
		ExitCode                   *int `json:"exit_code"`
	}
	read := func() []note {
		b, _ := os.ReadFile(notes)
		var out []note
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if l == "" {
				continue
			}
			var n note
			if err := json.Unmarshal([]byte(l), &n); err != nil {
				t.Fatalf("notification %q: %v", l, err)
			}
			out = append(out, n)
		}
		return out
	}
	waitFor(t, 20*time.Second, "six notifications", func() bool { return len(read()) >= 6 })
	for _, d := range ds {
		d.stop() // delivers what is queued
	}
	seen := map[string]bool{}
	failures, recoveries := 0, 0
	for _, n := range read() {
		key := n.Event + " " + n.Tick.String()
		if seen[key] {
			t.Errorf("%s notified twice", key)
		}
		seen[key] = true
		switch n.Event {
		case "failure":
			failures++
			if n.Tick.Unix()%2 == 0 || n.Status != "failed" || n.ExitCode == nil || *n.ExitCode != 3 ||
				!strings.Contains(n.Output, "tick ") {
				t.Errorf("failure notification %+v: want an odd tick, status failed, exit_code 3 and the output", n)
			}
		case "recovered":
			recoveries++
			if n.Tick.Unix()%2 != 0 || n.Status != "succeeded" {
				t.Errorf("recovered notification %+v: want an even tick that succeeded", n)
			}
		default:
			t.Errorf("unexpected event %q (the target has on: [failure, recovered])", n.Event)
		}
	}
	if failures == 0 || recoveries == 0 {
		t.Errorf("%d failures and %d recoveries notified, want both", failures, recoveries)
	}
}
