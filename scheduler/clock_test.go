package scheduler_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/scheduler"
)

// fakeReplica runs a scheduler on a fake clock with one job, recording runs.
func fakeReplica(t *testing.T, url string, clock *clockwork.FakeClock, j job.Job) (*replica, *recorder) {
	t.Helper()
	runs := newRecorder()
	r := newReplica(t, url, lockOpts("fake"), scheduler.Options{Clock: clock, LocalClock: true})
	j.Run = func(ctx context.Context) error {
		info, _ := job.FromContext(ctx)
		runs.add(rec{tick: info.Tick, token: info.Token})
		return nil
	}
	if err := r.s.Add(j); err != nil {
		t.Fatal(err)
	}
	r.start(t)
	return r, runs
}

// waitIdle waits until the job loop sleeps on its next tick and returns it.
func waitIdle(t *testing.T, r *replica, clock *clockwork.FakeClock) time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatalf("job loop never went idle: %v", err)
	}
	return r.s.Jobs()[0].Next
}

// setLastTick writes the shared state as if a replica had claimed tick.
func setLastTick(t *testing.T, url, name string, tick time.Time) {
	t.Helper()
	_, js := natstest.Connect(t, url)
	ctx := context.Background()
	// Opening a scheduler creates the history bucket.
	newReplica(t, url, lockOpts("setup"), scheduler.Options{})
	kv, err := js.KeyValue(ctx, scheduler.DefaultHistoryBucket)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(map[string]any{"last_tick": tick, "runs": []any{}})
	if _, err := kv.Put(ctx, name, data); err != nil {
		t.Fatal(err)
	}
}

func TestCatchUpWithinStartingDeadline(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	now := time.Date(2026, 6, 1, 12, 0, 45, 0, time.UTC)
	setLastTick(t, url, "report", now.Add(-3*time.Minute).Truncate(time.Minute)) // 11:57 ran; 11:58, 11:59, 12:00 did not
	clock := clockwork.NewFakeClockAt(now)
	r, runs := fakeReplica(t, url, clock, job.Job{Name: "report", Schedule: "* * * * *", StartingDeadline: time.Minute})

	got := runs.next(t, 10*time.Second)
	if want := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC); !got.tick.Equal(want) {
		t.Fatalf("caught up tick %v, want the latest missed one %v", got.tick, want)
	}
	if next := waitIdle(t, r, clock); !next.Equal(time.Date(2026, 6, 1, 12, 1, 0, 0, time.UTC)) {
		t.Errorf("next tick %v", next)
	}
	if n := len(runs.all()); n != 1 {
		t.Fatalf("%d runs, want exactly one catch-up run (never a burst)", n)
	}
	h, err := r.s.History(context.Background(), "report")
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 2 || h[0].Status != scheduler.StatusSucceeded || h[1].Status != scheduler.StatusMissed || !strings.HasPrefix(h[1].Error, "2 tick(s)") {
		t.Errorf("history %+v, want the run and a record of 2 missed ticks", h)
	}
}

func TestNoCatchUpBeyondStartingDeadline(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	now := time.Date(2026, 6, 1, 12, 0, 45, 0, time.UTC)
	setLastTick(t, url, "report", now.Add(-3*time.Minute).Truncate(time.Minute))
	clock := clockwork.NewFakeClockAt(now)
	r, runs := fakeReplica(t, url, clock, job.Job{Name: "report", Schedule: "* * * * *", StartingDeadline: 30 * time.Second})

	next := waitIdle(t, r, clock) // catch-up decided, loop asleep
	if n := len(runs.all()); n != 0 {
		t.Fatalf("%d runs of a tick 45 s old with a 30 s starting deadline", n)
	}
	clock.Advance(next.Sub(clock.Now()))
	got := runs.next(t, 10*time.Second)
	if !got.tick.Equal(time.Date(2026, 6, 1, 12, 1, 0, 0, time.UTC)) {
		t.Fatalf("ran tick %v", got.tick)
	}
	h, _ := r.s.History(context.Background(), "report")
	if len(h) < 2 || h[1].Status != scheduler.StatusMissed || !strings.HasPrefix(h[1].Error, "3 tick(s)") {
		t.Errorf("history %+v, want 3 missed ticks recorded", h)
	}
}

// Daylight saving time with a fixed-hour job in Europe/Berlin: the 02:30
// that does not exist on 2026-03-29 runs once at 03:00 CEST; the 02:30 that
// happens twice on 2026-10-25 runs once, at its first occurrence.
func TestDaylightSavingTime(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no tz data:", err)
	}
	cases := []struct {
		name        string
		start       time.Time
		ticks       []time.Time // runs expected, in order
		nextAfterwd time.Time
	}{
		{"spring forward", time.Date(2026, 3, 29, 0, 0, 0, 0, berlin),
			[]time.Time{time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC)}, // 03:00 CEST
			time.Date(2026, 3, 30, 0, 30, 0, 0, time.UTC)},            // 02:30 CEST next day
		{"fall back", time.Date(2026, 10, 25, 0, 0, 0, 0, berlin),
			[]time.Time{time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC)}, // 02:30 CEST, first pass
			time.Date(2026, 10, 26, 1, 30, 0, 0, time.UTC)},             // 02:30 CET next day, not 01:30Z today
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			url := natstest.RunServer(t, natstest.Options{}).ClientURL()
			clock := clockwork.NewFakeClockAt(c.start)
			r, runs := fakeReplica(t, url, clock, job.Job{Name: "nightly", Schedule: "30 2 * * *", Location: berlin})
			for _, want := range c.ticks {
				next := waitIdle(t, r, clock)
				if !next.Equal(want) {
					t.Fatalf("next tick %v, want %v", next.UTC(), want)
				}
				clock.Advance(next.Sub(clock.Now()))
				if got := runs.next(t, 10*time.Second); !got.tick.Equal(want) {
					t.Fatalf("ran %v, want %v", got.tick.UTC(), want)
				}
			}
			if next := waitIdle(t, r, clock); !next.Equal(c.nextAfterwd) {
				t.Errorf("after the transition the next tick is %v, want %v", next.UTC(), c.nextAfterwd)
			}
		})
	}
}
