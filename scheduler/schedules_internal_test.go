package scheduler

import (
	"testing"
	"time"

	"github.com/cronlock/cronlock/job"
)

// TestScheduleCacheKeysByLocation: jobs of one spec share a parsed
// schedule only within one location; two zones of one name (FixedZone)
// keep their own ticks.
func TestScheduleCacheKeysByLocation(t *testing.T) {
	t.Parallel()
	var c scheduleCache
	a, b := time.FixedZone("X", 0), time.FixedZone("X", 3600)
	parse := func(loc *time.Location) job.Schedule {
		s, err := c.parse(job.Job{Name: "j", Schedule: "0 12 * * *", Location: loc})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	from := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	sa, sb := parse(a), parse(b)
	if got, want := sa.Next(from), time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("zone X+0: next %v, want %v", got, want)
	}
	if got, want := sb.Next(from), time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("zone X+1h: next %v, want %v (it got the other zone's schedule)", got, want)
	}
	if parse(a) != sa || parse(nil) != parse(time.UTC) {
		t.Error("one spec in one location was parsed twice")
	}
}
