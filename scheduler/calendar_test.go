package scheduler_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/scheduler"
)

// TestSameScheduleOtherExcludeDates: two jobs with one schedule but
// different exclude_dates do not share ticks (the parsed-schedule cache
// keys by job.Job.ScheduleKey, not the spec alone); a schedules job shows
// its specs joined with " | ".
func TestSameScheduleOtherExcludeDates(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	r := newReplica(t, url, lockOpts("me"), scheduler.Options{})
	now := time.Now().UTC()
	day := func(t time.Time) job.Date { return job.Date{Year: t.Year(), Month: t.Month(), Day: t.Day()} }
	var plainRuns, excludedRuns atomic.Int32
	count := func(n *atomic.Int32) func(context.Context) error {
		return func(context.Context) error { n.Add(1); return nil }
	}
	jobs := []job.Job{
		{Name: "plain", Schedule: "* * * * * *", Run: count(&plainRuns)},
		// Today and tomorrow (UTC) excluded: no tick during the test.
		{Name: "excluded", Schedule: "* * * * * *", Calendar: &job.Calendar{ExcludeDates: []job.Date{day(now), day(now.Add(24 * time.Hour))}},
			Run: count(&excludedRuns)},
		{Name: "union", Calendar: &job.Calendar{Schedules: []string{"0 0 1 1 *", "0 0 1 7 *"}}, Run: count(new(atomic.Int32))},
	}
	for _, j := range jobs {
		if err := r.s.Add(j); err != nil {
			t.Fatal(err)
		}
	}
	byName := map[string]scheduler.Status{}
	for _, st := range r.s.Jobs() {
		byName[st.Name] = st
	}
	if next := byName["excluded"].Next; next.Before(now.Add(24 * time.Hour)) {
		t.Errorf("excluded: next tick %v is on an excluded day", next)
	}
	if got, want := byName["union"].Schedule, "0 0 1 1 * | 0 0 1 7 *"; got != want {
		t.Errorf("union: Status.Schedule = %q, want %q", got, want)
	}
	r.start(t)
	deadline := time.Now().Add(10 * time.Second)
	for plainRuns.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if plainRuns.Load() < 2 {
		t.Fatalf("plain: %d runs in 10s, want at least 2", plainRuns.Load())
	}
	if n := excludedRuns.Load(); n != 0 {
		t.Errorf("excluded: %d runs on an excluded day, want 0", n)
	}
}
