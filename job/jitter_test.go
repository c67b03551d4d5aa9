package job

import (
	"fmt"
	"testing"
	"time"
)

func TestTickJitter(t *testing.T) {
	t.Parallel()
	tick := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	if d := TickJitter("a", tick, 0); d != 0 {
		t.Errorf("no jitter window: %v, want 0", d)
	}
	if TickJitter("a", tick, time.Minute) != TickJitter("a", tick, time.Minute) {
		t.Error("the same (job, tick) gave two delays")
	}
	// 100 jobs on one tick spread over the window: all within it, and not
	// bunched (at least half of ten 6 s buckets used, most far more).
	buckets := map[time.Duration]bool{}
	for i := range 100 {
		d := TickJitter(fmt.Sprintf("job-%d", i), tick, time.Minute)
		if d < 0 || d >= time.Minute {
			t.Fatalf("job-%d: %v outside [0, 1m)", i, d)
		}
		buckets[d/(6*time.Second)] = true
	}
	if len(buckets) < 5 {
		t.Errorf("100 jobs used %d of 10 buckets of the window", len(buckets))
	}
	if TickJitter("a", tick, time.Minute) == TickJitter("a", tick.Add(time.Hour), time.Minute) &&
		TickJitter("a", tick, time.Minute) == TickJitter("a", tick.Add(2*time.Hour), time.Minute) {
		t.Error("jitter does not depend on the tick")
	}
}
