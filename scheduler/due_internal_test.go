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

// TestTurnDelay: a replica tries a spreadStep per rank after the tick (and
// a busyStep per busy run of an earlier tick, at most maxBusySteps), or at
// once when it reaches the tick late.
func TestTurnDelay(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		rank, busy int
		late       bool
		want       time.Duration
	}{
		{0, 0, false, 0},
		{1, 0, false, spreadStep},
		{4, 1, false, busyStep + 4*spreadStep},
		{0, 100, false, maxBusySteps * busyStep},
		{2, 3, true, 0},
		{7, 0, true, 0},
	} {
		if got := turnDelay(tc.rank, tc.late, tc.busy); got != tc.want {
			t.Errorf("turnDelay(rank %d, late %v, busy %d) = %v, want %v", tc.rank, tc.late, tc.busy, got, tc.want)
		}
	}
}

// TestSpreadWait: the replica a job is dealt to tries at once when late,
// after its busy steps otherwise; the others wait until the tick, then
// their turn, late or not.
func TestSpreadWait(t *testing.T) {
	t.Parallel()
	const until = 300 * time.Millisecond
	for _, tc := range []struct {
		rank, busy int
		late       bool
		until      time.Duration
		want       time.Duration
	}{
		{0, 0, true, until, 0},
		{0, 2, false, until, 2 * busyStep},
		{1, 0, true, until, until + spreadStep},
		{1, 0, false, until, until + spreadStep},
		{2, 1, true, 0, busyStep + 2*spreadStep},
	} {
		if got := spreadWait(tc.rank, tc.late, tc.busy, tc.until); got != tc.want {
			t.Errorf("spreadWait(rank %d, late %v, busy %d, until %v) = %v, want %v", tc.rank, tc.late, tc.busy, tc.until, got, tc.want)
		}
	}
}
