package main

import (
	"strings"
	"testing"
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
