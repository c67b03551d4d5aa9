package scheduler

import (
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/history"
	"github.com/cronlock/cronlock/job"
)

// missedReason labels a missed tick: overlap while any run of the job
// (manual too) held the lock to a recorded end, lock_held where this
// replica found the lock held by nothing that explains it, else the
// claim's gap reason.
func TestMissedReason(t *testing.T) {
	t.Parallel()
	at := func(s int) time.Time { return time.Date(2026, 12, 1, 9, 0, s, 0, time.UTC) }
	st := &history.Record{Runs: []Run{
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
		want Reason
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

// longestGap finds a weekday job's weekend whatever day it starts on and
// however often the job runs, at a bounded cost.
func TestLongestGap(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		spec string
		want time.Duration
	}{
		{"0 * * * *", time.Hour},
		{"* * * * * *", time.Second},
		{"0 9 * * 1-5", 72 * time.Hour},                 // Friday 9:00 to Monday 9:00
		{"*/5 * * * 1-5", 48*time.Hour + 5*time.Minute}, // Friday 23:55 to Monday 0:00
		{"*/10 * * * * 1-5", 48*time.Hour + 10*time.Second},
		{"0 0 1 * *", 31 * 24 * time.Hour},
	} {
		sched, err := job.ParseSchedule(c.spec, time.UTC)
		if err != nil {
			t.Fatal(err)
		}
		for day := range 7 { // each weekday as the start
			from := time.Date(2026, 12, 7+day, 10, 17, 0, 0, time.UTC)
			if got := longestGap(sched, from); got != c.want && !(c.spec == "0 0 1 * *" && got >= 30*24*time.Hour) {
				t.Errorf("%q from %s: %v, want %v", c.spec, from.Format("Mon 15:04"), got, c.want)
			}
		}
	}
}
