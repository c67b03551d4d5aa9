package job

import (
	"testing"
	"time"
)

// TestDayRuleStarStep pins the documented either-day rule: "*/2" in the
// day-of-month counts as restricted (robfig/cron), so "0 0 */2 * MON" runs on
// odd dates OR Mondays, where Vixie cron would run on odd-dated Mondays only.
func TestDayRuleStarStep(t *testing.T) {
	t.Parallel()
	s, err := ParseSchedule("0 0 */2 * MON", nil)
	if err != nil {
		t.Fatal(err)
	}
	// June 2026: Monday the 1st, then odd dates and Mondays.
	want := []int{1, 3, 5, 7, 8, 9}
	at := time.Date(2026, 5, 31, 12, 0, 0, 0, time.UTC)
	for _, d := range want {
		at = s.Next(at)
		if at.Day() != d || at.Month() != time.June {
			t.Fatalf("next tick %v, want June %d", at, d)
		}
	}
}
