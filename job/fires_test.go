package job

import (
	"testing"
	"time"
)

func TestNeverFires(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		spec  string
		never bool
	}{
		{"0 0 30 2 *", true},
		{"0 0 31 2 *", true},
		{"0 0 31 4,6,9,11 *", true},
		{"0 0 30,31 2 *", true},
		{"TZ=Europe/Berlin 0 0 30 2 *", true},
		{"0 0 0 30 2 *", true}, // 6 fields
		// Both day fields starred-or-restricted: AND, and no 30 Feb exists.
		{"0 0 30 2 ?", true},
		{"0 0 29 2 *", false}, // every leap year
		{"0 0 29 2 MON", false},
		{"0 0 30 2 MON", false}, // either-day rule: every Monday in February
		{"0 0 31 * *", false},
		{"0 0 31 1-11/2 *", false},
		{"* * * * *", false},
		{"@yearly", false},
		{"@every 1h", false},
	} {
		s, err := ParseSchedule(tc.spec, nil)
		if err != nil {
			t.Fatalf("%q: %v", tc.spec, err)
		}
		if got := NeverFires(s); got != tc.never {
			t.Errorf("NeverFires(%q) = %v, want %v", tc.spec, got, tc.never)
		}
		// Cross-check with Next: a schedule that fires has a tick within
		// 28 years (the weekday cycle of February 29), one that never
		// fires has none.
		at, found := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), false
		for range 6 {
			if n := s.Next(at); !n.IsZero() {
				found = true
				break
			}
			at = at.AddDate(5, 0, 0)
		}
		if found == tc.never {
			t.Errorf("%q: a tick within 30 years of 2026: %v, but NeverFires = %v", tc.spec, found, tc.never)
		}
	}
}
