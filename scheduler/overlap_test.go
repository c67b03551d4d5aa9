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

// span is one run as the job saw it.
type span struct {
	replica    string
	tick       time.Time
	start, end time.Time
}

// spans records the runs of a job that takes d (or until its context ends).
type spans struct {
	mu  sync.Mutex
	all []span
}

func (s *spans) job(replica string, d time.Duration) func(context.Context) error {
	return func(ctx context.Context) error {
		info, _ := job.FromContext(ctx)
		x := span{replica: replica, tick: info.Tick, start: time.Now()}
		defer func() {
			x.end = time.Now()
			s.mu.Lock()
			s.all = append(s.all, x)
			s.mu.Unlock()
		}()
		select {
		case <-time.After(d):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *spans) list() []span {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.all)
	slices.SortFunc(out, func(a, b span) int { return a.start.Compare(b.start) })
	return out
}

// overlapReplicas starts two replicas running j (every second) with the
// spans recorded, each run taking d.
func overlapReplicas(t *testing.T, j job.Job, d time.Duration) (*spans, []*replica) {
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	sp := &spans{}
	var reps []*replica
	for _, id := range []string{"r1", "r2"} {
		r := newReplica(t, url, lockOpts(id), scheduler.Options{Logger: testLogger(t, id)})
		j := j
		j.Run = sp.job(id, d)
		addJob(t, r, j)
		reps = append(reps, r)
		r.start(t)
	}
	return sp, reps
}

// checkSerial fails the test if two runs overlapped or a tick ran twice.
func checkSerial(t *testing.T, runs []span) {
	t.Helper()
	seen := map[time.Time]bool{}
	for i, r := range runs {
		if seen[r.tick] {
			t.Errorf("tick %v ran twice", r.tick)
		}
		seen[r.tick] = true
		if i > 0 && r.start.Before(runs[i-1].end) {
			t.Errorf("run of %v started at %v, before the run of %v ended at %v", r.tick, r.start, runs[i-1].tick, runs[i-1].end)
		}
	}
}

// Under overlap queue, with a job that takes 2.3 s of a 1 s schedule on two
// replicas: when a run ends, the latest tick that came during it starts at
// once (well before the next tick), the older one is missed (overlap), and
// runs never overlap.
func TestOverlapQueueRunsTheLatestTickWhenTheRunEnds(t *testing.T) {
	t.Parallel()
	const name = "queued"
	sp, reps := overlapReplicas(t, job.Job{Name: name, Schedule: "* * * * * *", Overlap: job.OverlapQueue}, 2300*time.Millisecond)
	waitFor(t, 20*time.Second, "three runs", func() bool { return len(sp.list()) >= 3 })
	runs := sp.list() // the runs that ended before the shutdown, which cancels the rest
	for _, r := range reps {
		r.stop()
	}
	checkSerial(t, runs)
	for i := 1; i < len(runs); i++ {
		prev, r := runs[i-1], runs[i]
		if gap := r.start.Sub(prev.end); gap > 500*time.Millisecond {
			t.Errorf("the queued tick %v started %v after the run before it ended, want at once", r.tick, gap)
		}
		if latest := prev.end.Truncate(time.Second); !r.tick.Equal(latest) {
			t.Errorf("after the run of %v ended at %v, tick %v ran; want the latest tick before the end, %v",
				prev.tick, prev.end, r.tick, latest)
		}
	}
	missed := withStatus(runsOf(t, reps[0], name), scheduler.StatusMissed)
	if len(missed) == 0 || missed[0].Reason != scheduler.ReasonOverlap {
		t.Errorf("missed entries %+v, want the older ticks missed for overlap", missed)
	}
}

// Under overlap replace, with a job that would take 10 s of a 2 s
// schedule: each tick cancels the run in progress (recorded cancelled,
// reason replaced, by its replica) and starts once it is gone; runs never
// overlap and each tick runs once.
func TestOverlapReplaceCancelsTheRunningRun(t *testing.T) {
	t.Parallel()
	const name = "replaced"
	sp, reps := overlapReplicas(t, job.Job{Name: name, Schedule: "*/2 * * * * *", Overlap: job.OverlapReplace}, 10*time.Second)
	waitFor(t, 20*time.Second, "three runs", func() bool { return len(sp.list()) >= 3 })
	runs := sp.list() // the runs that ended before the shutdown, which cancels the rest
	for _, r := range reps {
		r.stop()
	}
	checkSerial(t, runs)
	for i := 1; i < len(runs); i++ {
		prev, r := runs[i-1], runs[i]
		if d := prev.end.Sub(r.tick); d < 0 || d > time.Second {
			t.Errorf("the run of %v ended %v after tick %v came, want within 1 s", prev.tick, d, r.tick)
		}
		if gap := r.start.Sub(prev.end); gap > 500*time.Millisecond {
			t.Errorf("tick %v started %v after the run it replaced ended, want at once", r.tick, gap)
		}
	}
	var replaced []scheduler.Run
	for _, r := range withStatus(runsOf(t, reps[0], name), scheduler.StatusCancelled) {
		if r.Reason == scheduler.ReasonReplaced && (r.By == "r1" || r.By == "r2") {
			replaced = append(replaced, r)
		}
	}
	if len(replaced) < 2 {
		t.Errorf("%d runs recorded cancelled (replaced) by their replica, want at least 2", len(replaced))
	}
}
