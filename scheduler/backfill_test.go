package scheduler_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/scheduler"
)

// A backfill over ticks a suspension skipped runs each of them once,
// oldest first, as a run of its own tick recorded with Backfill, on
// whichever replica; a second backfill of the same range finds nothing to
// run; ranges it cannot honour are refused.
func TestBackfillRunsTheTicksWithoutARun(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	ctx := context.Background()
	const name = "nightly"
	starts := newRecorder()
	var reps []*replica
	for _, id := range []string{"r1", "r2"} {
		r := newReplica(t, url, lockOpts(id), scheduler.Options{Logger: testLogger(t, id)})
		addJob(t, r, job.Job{Name: name, Schedule: "* * * * * *", Run: startRecorder(id, starts, 50*time.Millisecond)})
		reps = append(reps, r)
		r.start(t)
	}
	_, js := natstest.Connect(t, url)
	h, err := scheduler.OpenHistory(ctx, js, scheduler.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	starts.next(t, 10*time.Second)
	if err := h.Suspend(ctx, name, "test", time.Now()); err != nil {
		t.Fatal(err)
	}
	from := time.Now().Truncate(time.Second).Add(time.Second)
	waitFor(t, 10*time.Second, "three ticks skipped", func() bool {
		sk := withStatus(runsOf(t, reps[0], name), scheduler.StatusSkipped)
		return len(sk) > 0 && sk[0].Ticks >= 3
	})
	if err := h.Resume(ctx, name); err != nil {
		t.Fatal(err)
	}
	to := from.Add(2 * time.Second)
	waitFor(t, 5*time.Second, "a run after the resume", func() bool {
		all := starts.all()
		return all[len(all)-1].tick.After(to)
	})
	sched, _ := job.ParseSchedule("* * * * * *", time.UTC)
	dry, err := h.Backfill(ctx, name, scheduler.BackfillOptions{From: from, To: to, Schedule: sched, DryRun: true})
	if err != nil || len(dry) != 3 {
		t.Fatalf("dry run: %v, %v; want the three skipped ticks", dry, err)
	}
	ticks, err := reps[1].s.Backfill(ctx, name, scheduler.BackfillOptions{From: from, To: to, By: "test"})
	if err != nil || !slices.EqualFunc(ticks, dry, time.Time.Equal) {
		t.Fatalf("Backfill = %v, %v; want %v", ticks, err, dry)
	}
	var got []scheduler.Run
	waitFor(t, 10*time.Second, "three backfilled runs", func() bool {
		got = nil
		for _, r := range runsOf(t, reps[0], name) {
			if r.Backfill && r.Finished() {
				got = append(got, r)
			}
		}
		return len(got) == 3
	})
	slices.Reverse(got) // oldest first
	for i, r := range got {
		if !r.Tick.Equal(ticks[i]) || r.Status != scheduler.StatusSucceeded {
			t.Errorf("backfilled run %d: tick %v %s, want tick %v succeeded", i, r.Tick, r.Status, ticks[i])
		}
		if i > 0 && r.Start.Before(got[i-1].End) {
			t.Errorf("backfilled runs overlap: %v started before %v ended", r.Tick, got[i-1].Tick)
		}
	}
	ran := 0
	for _, x := range starts.all() {
		if !x.tick.Before(from) && !x.tick.After(to) {
			ran++
		}
	}
	if ran != 3 {
		t.Errorf("the range's ticks started %d times, want 3", ran)
	}
	waitFor(t, 5*time.Second, "the backfill ended", func() bool {
		st, err := h.State(ctx, name)
		return err == nil && st.Backfill == nil
	})
	if again, err := h.Backfill(ctx, name, scheduler.BackfillOptions{From: from, To: to, Schedule: sched}); err != nil || len(again) != 0 {
		t.Errorf("a second backfill of the range: %v, %v; want nothing to run", again, err)
	}
	if _, err := h.Backfill(ctx, name, scheduler.BackfillOptions{From: from, To: time.Now().Add(time.Hour), Schedule: sched}); !errors.Is(err, scheduler.ErrBackfillRange) {
		t.Errorf("a backfill into the future: %v, want ErrBackfillRange", err)
	}
	if _, err := h.Backfill(ctx, name, scheduler.BackfillOptions{From: from.Add(-time.Hour), To: to, Schedule: sched}); !errors.Is(err, scheduler.ErrBackfillRange) {
		t.Errorf("a backfill of 3,600 ticks: %v, want ErrBackfillRange", err)
	}
	if _, err := h.CancelBackfill(ctx, name, "test"); !errors.Is(err, scheduler.ErrNotRunning) {
		t.Errorf("CancelBackfill without a backfill: %v, want ErrNotRunning", err)
	}
	for _, r := range reps {
		r.stop()
	}
}
