package scheduler

import (
	"slices"
	"testing"
	"time"
)

// TestDueTicks: the jobs noted at one instant are one set whatever the
// zone of the tick, each name once, and a tick passed by over dueKept is
// forgotten.
func TestDueTicks(t *testing.T) {
	t.Parallel()
	var d dueTicks
	tick := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	d.note(tick, "b")
	d.note(tick.In(time.FixedZone("X", 3600)), "a")
	d.note(tick, "b") // added again after a Remove
	d.note(tick.Add(time.Second), "c")
	if got := d.at(tick); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("due at %v: %v, want [a b]", tick, got)
	}
	later := tick.Add(2 * dueKept)
	d.note(later, "d")
	if got := d.at(later); !slices.Equal(got, []string{"d"}) {
		t.Errorf("due at %v: %v, want [d]", later, got)
	}
	if got := d.at(tick); got != nil {
		t.Errorf("a tick %v old is still held: %v", 2*dueKept, got)
	}
}
