package scheduler

import (
	"maps"
	"testing"
	"time"
)

// TestOrphansIndex: the index follows each write's owners, reports only the
// jobs of owners not live (timed from when each was first found gone) and
// this replica's idle ones, and forgets a job once no run of it is running.
func TestOrphansIndex(t *testing.T) {
	o := newOrphans()
	o.note("a", []string{"x", "y"})
	o.note("b", []string{"x"})
	o.note("c", []string{"self"})
	o.note("d", []string{"self"})
	idle := func(job string) bool { return job == "c" }
	t0 := time.Now()
	want := map[orphan]time.Duration{{"a", "x"}: 0, {"b", "x"}: 0, {"c", "self"}: 0}
	if got := o.gone(t0, "self", []string{"self", "y"}, idle); !maps.Equal(got, want) {
		t.Fatalf("gone = %v, want %v", got, want)
	}
	o.note("a", []string{"y"}) // x's run of a ended
	want = map[orphan]time.Duration{{"b", "x"}: 2 * time.Second, {"c", "self"}: 0}
	if got := o.gone(t0.Add(2*time.Second), "self", []string{"self", "y"}, idle); !maps.Equal(got, want) {
		t.Fatalf("gone after a's update = %v, want %v", got, want)
	}
	// x is back: its jobs are not gone, and its time gone starts over.
	if got := o.gone(t0.Add(3*time.Second), "self", []string{"self", "x", "y"}, idle); len(got) != 1 {
		t.Fatalf("gone with x live = %v, want only c", got)
	}
	if got := o.gone(t0.Add(4*time.Second), "self", []string{"self"}, idle)[orphan{"b", "x"}]; got != 0 {
		t.Errorf("x gone again: found gone for %v, want 0", got)
	}
	for _, j := range []string{"a", "b", "c", "d"} {
		o.note(j, nil)
	}
	if len(o.byOwner) != 0 || len(o.byJob) != 0 || len(o.since) != 0 {
		t.Errorf("after every run ended: byOwner %v, byJob %v, since %v; want all empty", o.byOwner, o.byJob, o.since)
	}
}

// TestSweepRankIsADeal: every replica computes the same order, so exactly
// one of them has rank 0 for a job.
func TestSweepRankIsADeal(t *testing.T) {
	live := []string{"r1", "r2", "r3"}
	for _, job := range []string{"a", "b", "report", "nightly.backup"} {
		seen := map[int]bool{}
		for _, self := range live {
			seen[sweepRank(job, self, live)] = true
		}
		if len(seen) != len(live) || !seen[0] {
			t.Errorf("job %s: ranks %v, want 0..%d once each", job, seen, len(live)-1)
		}
	}
	if r := sweepRank("a", "gone", live); r != len(live) {
		t.Errorf("rank of a replica not live = %d, want %d", r, len(live))
	}
}
