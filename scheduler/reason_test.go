package scheduler

import (
	"testing"
	"time"
)

// missedReason labels a missed tick: overlap while any run of the job
// (manual too) held the lock to a recorded end, lock_held where this
// replica found the lock held by nothing that explains it, else the
// claim's gap reason.
func TestMissedReason(t *testing.T) {
	t.Parallel()
	at := func(s int) time.Time { return time.Date(2026, 12, 1, 9, 0, s, 0, time.UTC) }
	st := &jobState{Runs: []Run{
		{Tick: at(0), Start: at(0), End: at(3), Status: StatusSucceeded},                  // scheduled, 0-3 s
		{Tick: at(10), Manual: true, Start: at(10), End: at(17), Status: StatusSucceeded}, // manual, 10-17 s
		{Tick: at(20), Start: at(20), Status: StatusAbandoned},                            // died at some point
		{Tick: at(30), Start: at(30), Status: StatusRunning},                              // no recorded end
		{Tick: at(25), Status: StatusMissed, Reason: ReasonNoReplica, Ticks: 1},
	}}
	req := claimRequest{gapReason: ReasonNoReplica, held: heldTicks{from: at(21), through: at(33)}}
	busy := busySpans(st)
	for _, c := range []struct {
		tick int
		want string
	}{
		{2, ReasonOverlap},    // during the scheduled run
		{3, ReasonNoReplica},  // the run had ended
		{12, ReasonOverlap},   // during the manual run
		{17, ReasonNoReplica}, // the manual run had ended
		{20, ReasonNoReplica}, // before this replica found the lock held
		{22, ReasonLockHeld},  // held by the abandoned run's holder
		{25, ReasonLockHeld},  // a missed entry holds nothing
		{31, ReasonLockHeld},  // a run without a recorded end explains nothing
		{34, ReasonNoReplica}, // after the held span
	} {
		if got := missedReason(at(c.tick), busy, req); got != c.want {
			t.Errorf("tick at %2d s: %q, want %q", c.tick, got, c.want)
		}
	}
}
