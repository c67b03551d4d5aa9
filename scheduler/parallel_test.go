package scheduler_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/scheduler"
)

// Under overlap allow with max_parallel 2, a job of 2.5 s on a 1 s
// schedule runs two ticks at once, on one replica as on two, never three;
// each tick runs at most once, fencing tokens grow with the ticks, and a
// tick that finds both slots taken is missed with reason overlap. A cancel
// of one of the runs names its tick, and stops only that run.
func TestOverlapAllowRunsUpToMaxParallel(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 2} {
		t.Run(map[int]string{1: "one replica", 2: "two replicas"}[n], func(t *testing.T) {
			t.Parallel()
			testAllow(t, n)
		})
	}
}

func testAllow(t *testing.T, replicas int) {
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	const name = "parallel"
	var mu sync.Mutex
	running, most := 0, 0
	var recs []rec
	work := func(ctx context.Context) error {
		info, _ := job.FromContext(ctx)
		mu.Lock()
		running++
		most = max(most, running)
		recs = append(recs, rec{tick: info.Tick, token: info.Token, start: time.Now()})
		mu.Unlock()
		defer func() { mu.Lock(); running--; mu.Unlock() }()
		select {
		case <-time.After(2500 * time.Millisecond):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	var reps []*replica
	for i := range replicas {
		id := []string{"r1", "r2"}[i]
		r := newReplica(t, url, lockOpts(id), scheduler.Options{Logger: testLogger(t, id)})
		addJob(t, r, job.Job{Name: name, Schedule: "* * * * * *", Overlap: job.OverlapAllow, MaxParallel: 2, Run: work})
		reps = append(reps, r)
		r.start(t)
	}
	waitFor(t, 20*time.Second, "five runs", func() bool { mu.Lock(); defer mu.Unlock(); return len(recs) >= 5 })
	var missed []scheduler.Run
	waitFor(t, 5*time.Second, "a tick missed for overlap", func() bool {
		missed = withStatus(runsOf(t, reps[0], name), scheduler.StatusMissed)
		return len(missed) > 0
	})
	if missed[0].Reason != scheduler.ReasonOverlap {
		t.Errorf("missed with reason %q, want overlap", missed[0].Reason)
	}
	// Cancel without a tick is ambiguous while two run; with one, only it stops.
	_, js := natstest.Connect(t, url)
	h, err := scheduler.OpenHistory(context.Background(), js, scheduler.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var inProgress []scheduler.Run
	defer func() {
		if t.Failed() {
			for _, r := range runsOf(t, reps[0], name) {
				t.Logf("%v %s %s token %d start %v end %v", r.Tick, r.Status, r.Reason, r.Token, r.Start, r.End)
			}
		}
	}()
	waitFor(t, 5*time.Second, "two runs in progress", func() bool {
		inProgress = withStatus(runsOf(t, reps[0], name), scheduler.StatusRunning)
		return len(inProgress) == 2
	})
	if _, err := h.Cancel(context.Background(), name, scheduler.CancelOptions{}); err == nil {
		t.Error("Cancel without a tick while two runs are in progress: no error")
	}
	target := inProgress[0]
	if c, err := h.Cancel(context.Background(), name, scheduler.CancelOptions{By: "test", Tick: target.Tick}); err != nil {
		t.Logf("Cancel of tick %v: %v (it may have ended meanwhile)", target.Tick, err)
	} else {
		actx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if got, err := h.AwaitRun(actx, c); err != nil || got.Status != scheduler.StatusCancelled {
			t.Errorf("the cancelled run: %+v, %v; want cancelled", got, err)
		}
	}
	for _, r := range reps {
		r.stop()
	}
	mu.Lock()
	defer mu.Unlock()
	if most != 2 {
		t.Errorf("%d runs at once, want 2 (max_parallel)", most)
	}
	slices.SortFunc(recs, func(a, b rec) int { return a.tick.Compare(b.tick) })
	for i := 1; i < len(recs); i++ {
		if recs[i].tick.Equal(recs[i-1].tick) {
			t.Errorf("tick %v ran twice", recs[i].tick)
		}
		if recs[i].token <= recs[i-1].token {
			t.Errorf("token %d of tick %v is not above %d of the tick before", recs[i].token, recs[i].tick, recs[i-1].token)
		}
	}
	for _, r := range runsOf(t, reps[0], name) {
		if r.Tick.Equal(target.Tick) && r.Status == scheduler.StatusCancelled && r.By != "test" {
			t.Errorf("the cancelled run of %v is by %q, want test", r.Tick, r.By)
		}
	}
}
