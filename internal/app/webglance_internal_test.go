package app

import (
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/web"
	"github.com/cronlock/cronlock/scheduler"
)

// TestGlanceRateCountsRunsThatRanAndEnded: the success rate is of the runs
// that ran and ended; missed and skipped ticks and a running run do not
// count, and failures are what RunStatus.Failed says.
func TestGlanceRateCountsRunsThatRanAndEnded(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	ran := func(st scheduler.RunStatus, owner string) scheduler.Run {
		return scheduler.Run{Tick: base, Start: base, End: base.Add(time.Second), Status: st, Owner: owner}
	}
	runs := []scheduler.Run{ // newest first
		{Tick: base, Status: scheduler.StatusMissed, Owner: "replica-m"},
		ran(scheduler.StatusSucceeded, "replica-a"),
		{Tick: base, Status: scheduler.StatusSkipped},
		ran(scheduler.StatusLost, "replica-b"),
		ran(scheduler.StatusSucceeded, "replica-a"),
		ran(scheduler.StatusCancelled, "replica-a"),
	}
	var j web.Job
	glance(&j, runs, time.UTC)
	if j.SuccessRate == nil || *j.SuccessRate != 0.5 {
		t.Fatalf("rate = %v, want 2 of 4 runs that ran", j.SuccessRate)
	}
	if len(j.RecentRuns) != len(runs) || !j.RecentRuns[3].Failed || j.RecentRuns[5].Failed || j.RecentRuns[0].Failed {
		t.Fatalf("strip = %+v: want only the lost run failed", j.RecentRuns)
	}
	if j.LastOwner != "" {
		t.Errorf("last owner = %q for a missed tick, which nobody ran", j.LastOwner)
	}
	j = web.Job{Next: base.Add(time.Hour)}
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	glance(&j, []scheduler.Run{{Tick: base, Status: scheduler.StatusRunning, Start: base, Owner: "replica-c"}}, tokyo)
	if j.SuccessRate != nil || j.LastOwner != "replica-c" || j.NextLocal != "2026-12-01 22:00:00 JST" {
		t.Errorf("running only: rate %v, owner %q, next %q", j.SuccessRate, j.LastOwner, j.NextLocal)
	}
	many := make([]scheduler.Run, 50)
	for i := range many {
		many[i] = ran(scheduler.StatusSucceeded, "replica-a")
	}
	glance(&j, many, time.UTC)
	if len(j.RecentRuns) != web.MaxRecentRuns {
		t.Errorf("strip of %d runs, want at most %d", len(j.RecentRuns), web.MaxRecentRuns)
	}
}
