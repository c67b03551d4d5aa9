package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
)

// cronlock backfill with the built binary: after three ticks a suspension
// skipped, --dry-run lists them, a backfill runs each once as a run of its
// own tick (CRONLOCK_TICK, backfill: true in status --json), and the API
// then finds nothing left in the range; bad ranges and bodies are refused
// naming the problem.
func TestBackfillCommandAndAPI(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	dir := t.TempDir()
	ticks := filepath.Join(dir, "ticks")
	cfg := writeFile(t, dir, "r1.yaml", fmt.Sprintf(`
nats: {url: %s}
lock: {lease: 2s, renew: 500ms, owner: r1}
http: {listen: "127.0.0.1:0", admin_token: %s}
shutdown_grace: 1s
jobs:
  - name: hourly.report
    schedule: "* * * * * *"
    shell: 'echo "$CRONLOCK_TICK" >> %q'
`, url, runtimeToken, ticks))
	d := startDaemon(t, dir, cfg)
	base := httpBase(t, d)
	cli := func(code int, args ...string) result {
		t.Helper()
		r := cronlock(t, nil, append([]string{args[0], "-c", cfg}, args[1:]...)...)
		if r.code != code {
			t.Fatalf("cronlock %q: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, r.code, code, r.stdout, r.stderr)
		}
		return r
	}
	waitFor(t, 20*time.Second, "a run", func() bool { return len(fileLines(t, ticks)) >= 1 })
	cli(0, "suspend", "hourly.report")
	from := time.Now().Truncate(time.Second).Add(2 * time.Second)
	to := from.Add(2 * time.Second)
	waitFor(t, 15*time.Second, "the range's ticks recorded skipped", func() bool {
		var st []struct {
			Runs []struct {
				Tick   time.Time
				Status string
				Ticks  int
			}
		}
		if json.Unmarshal([]byte(cli(0, "status", "--json", "hourly.report").stdout), &st) != nil || len(st) != 1 {
			return false
		}
		for _, r := range st[0].Runs { // one entry for the consecutive skipped ticks (every second)
			if r.Status == "skipped" && !r.Tick.After(from) && !r.Tick.Add(time.Duration(r.Ticks-1)*time.Second).Before(to) {
				return true
			}
		}
		return false
	})
	cli(0, "resume", "hourly.report")
	waitFor(t, 5*time.Second, "a run after the resume", func() bool {
		l := fileLines(t, ticks)
		last, _ := time.Parse(time.RFC3339, l[len(l)-1])
		return last.After(to)
	})
	f, tt := from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339)
	if r := cli(0, "backfill", "--dry-run", "--from", f, "--to", tt, "hourly.report"); strings.Count(r.stdout, "\n") != 4 {
		t.Errorf("backfill --dry-run: %q, want the three skipped ticks", r.stdout)
	}
	if r := cli(2, "backfill", "--from", f, "--to", time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "hourly.report"); !strings.Contains(r.stderr, "last claimed tick") {
		t.Errorf("backfill into the future: stderr %q", r.stderr)
	}
	cli(0, "backfill", "--from", f, "--to", tt, "hourly.report")
	waitFor(t, 10*time.Second, "the three ticks ran", func() bool {
		n := 0
		for _, l := range fileLines(t, ticks) {
			if l == f || l == from.Add(time.Second).UTC().Format(time.RFC3339) || l == tt {
				n++
			}
		}
		return n == 3
	})
	var st []struct {
		Runs []struct {
			Tick     time.Time
			Backfill bool
		}
	}
	if err := json.Unmarshal([]byte(cli(0, "status", "--json", "-n", "20", "hourly.report").stdout), &st); err != nil || len(st) != 1 {
		t.Fatalf("status --json: %v", err)
	}
	back := 0
	for _, r := range st[0].Runs {
		if r.Backfill {
			back++
		}
	}
	if back != 3 {
		t.Errorf("status --json shows %d backfilled runs, want 3", back)
	}
	body := fmt.Sprintf(`{"from": %q, "to": %q}`, f, tt)
	if code, resp, _ := request(t, "POST", base+"/api/jobs/hourly.report/backfill", runtimeToken, body, nil); code != http.StatusOK || !strings.Contains(resp, `"ticks": []`) {
		t.Errorf("POST backfill of a range with nothing left = %d %s, want 200 with no ticks", code, resp)
	}
	if code, resp, _ := request(t, "POST", base+"/api/jobs/hourly.report/backfill", runtimeToken, `{"to": "x"}`, nil); code != http.StatusBadRequest {
		t.Errorf("POST backfill with a bad body = %d %s, want 400", code, resp)
	}
	if code, resp, _ := request(t, "POST", base+"/api/jobs/hourly.report/backfill", "", body, nil); code != http.StatusForbidden {
		t.Errorf("POST backfill without the token = %d %s, want 403", code, resp)
	}
	if r := cli(1, "cancel", "--backfill", "hourly.report"); !strings.Contains(r.stderr, "no backfill") {
		t.Errorf("cancel --backfill without one: stderr %q", r.stderr)
	}
}
