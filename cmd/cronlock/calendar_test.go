package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNextCalendar: `cronlock next` and `validate` on a job with schedules
// and exclude_dates, and on one whose end_at has passed.
func TestNextCalendar(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := writeFile(t, dir, "cronlock.yaml", `
jobs:
  - name: cal
    # Weekdays at 09:00 (Mondays twice over: once), Fridays at 17:30 too.
    schedules: ["0 0 9 * * 1-5", "0 0 9 * * 1", "0 30 17 * * 5"]
    timezone: Europe/Berlin
    exclude_dates: ["2026-03-30", "2026-04-02"]
    shell: "true"
  - name: over
    schedule: "@daily"
    end_at: "2026-01-01T00:00:00Z"
    shell: "true"
`)
	r := cronlock(t, nil, "next", "-c", cfg, "-n", "5", "--from", from, "cal")
	want := "2026-03-31T09:00:00+02:00\n2026-04-01T09:00:00+02:00\n2026-04-03T09:00:00+02:00\n" +
		"2026-04-03T17:30:00+02:00\n2026-04-06T09:00:00+02:00\n"
	if r.code != 0 || r.stdout != want {
		t.Errorf("next cal: exit %d, stdout\n%s\nwant\n%s\nstderr %s", r.code, r.stdout, want, r.stderr)
	}
	r = cronlock(t, nil, "next", "-c", cfg, "-n", "1", "--from", from)
	if r.code != 0 || !strings.Contains(r.stdout, "over  (ended 2026-01-01T00:00:00Z)\n") {
		t.Errorf("next: exit %d, stdout %q, want the ended job shown as ended", r.code, r.stdout)
	}
	r = cronlock(t, nil, "validate", "-c", cfg)
	if r.code != 0 || !strings.Contains(r.stdout, "schedule: 0 0 9 * * 1-5 | 0 0 9 * * 1 | 0 30 17 * * 5 (Europe/Berlin)") {
		t.Errorf("validate: exit %d, stdout %q", r.code, r.stdout)
	}
}

// TestDaemonRunsUnionOfSchedules runs `cronlock run` (embedded NATS, real
// child processes) with a job on two 6-field specs for a few seconds: it
// runs at every second divisible by 2 or 3, once each, even where both
// specs tick.
func TestDaemonRunsUnionOfSchedules(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "ticks")
	cfg := writeFile(t, dir, "cronlock.yaml", fmt.Sprintf(`
nats: {embedded: {store_dir: ./store}}
http: {listen: ""}
jobs:
  - name: union
    schedules: ["*/2 * * * * *", "*/3 * * * * *"]
    shell: 'echo "$CRONLOCK_TICK" >> %q'
`, out))
	d := startDaemon(t, dir, cfg)
	d.waitOutput("scheduler running", 30*time.Second)
	running := time.Now()
	// Await ticks over more than one 6-second cycle of the two specs.
	waitFor(t, 20*time.Second, "ticks over 7 seconds", func() bool {
		data, _ := os.ReadFile(out)
		f := strings.Fields(string(data))
		if len(f) < 2 {
			return false
		}
		a, errA := time.Parse(time.RFC3339, f[0])
		b, errB := time.Parse(time.RFC3339, f[len(f)-1])
		return errA == nil && errB == nil && b.Sub(a) >= 7*time.Second
	})
	d.stop()
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]int{}
	var first, last int64
	for _, line := range strings.Fields(string(data)) {
		tick, err := time.Parse(time.RFC3339, line)
		if err != nil {
			t.Fatalf("tick %q: %v", line, err)
		}
		u := tick.Unix()
		if seen[u]++; seen[u] == 2 {
			t.Errorf("tick %s ran twice", line)
		}
		if u%2 != 0 && u%3 != 0 {
			t.Errorf("tick %s is in neither spec", line)
		}
		if first == 0 || u < first {
			first = u
		}
		last = max(last, u)
	}
	if first == 0 || first > running.Unix()+3 {
		t.Fatalf("no tick within 3s of the scheduler running: %q", data)
	}
	for u := first; u <= last; u++ {
		if (u%2 == 0 || u%3 == 0) && seen[u] == 0 {
			t.Errorf("tick %s did not run", time.Unix(u, 0).UTC().Format(time.RFC3339))
		}
	}
	t.Logf("%d ticks from %d to %d", len(seen), first, last)
}
