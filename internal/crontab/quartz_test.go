package crontab

import (
	"testing"
	"time"

	"github.com/cronlock/cronlock/job"
)

// TestQuartzDaysConverted: lines with L, W, # or a lone ? in a day field,
// which the importer reported before, convert to specs with the same
// meaning, and the loaded schedule ticks on the days they name.
func TestQuartzDaysConverted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		line, spec string
		first      string // the first tick after 2026-02-01T00:00:00Z
	}{
		{"0 9 L * *", "0 9 L * *", "2026-02-28T09:00:00Z"},
		{"0 9 L-3 * ?", "0 9 L-3 * *", "2026-02-25T09:00:00Z"},
		{"0 18 LW * *", "0 18 LW * *", "2026-02-27T18:00:00Z"},
		{"0 9 1W * *", "0 9 1W * *", "2026-02-02T09:00:00Z"}, // the 1st is a Sunday
		{"0 9 ? * 5L", "0 9 * * 5L", "2026-02-27T09:00:00Z"},
		{"0 9 * * mon#2", "0 9 * * mon#2", "2026-02-09T09:00:00Z"},
		{"0 9 15,L * *", "0 9 15,L * *", "2026-02-15T09:00:00Z"},
		{"0 9 ? * MON", "0 9 * * MON", "2026-02-02T09:00:00Z"},
		{"0 9 13 * ?", "0 9 13 * *", "2026-02-13T09:00:00Z"},
	} {
		t.Run(tc.line, func(t *testing.T) {
			t.Parallel()
			j := convertOne(t, tc.line+" echo hi\n", Options{})
			if j.Schedule != tc.spec {
				t.Fatalf("%q converted to %q, want %q", tc.line, j.Schedule, tc.spec)
			}
			s, err := job.ParseSchedule(j.Schedule, j.Location)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Next(time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)).UTC().Format(time.RFC3339); got != tc.first {
				t.Errorf("%q: first tick %s, want %s", j.Schedule, got, tc.first)
			}
		})
	}
}
