package scheduler_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/scheduler"
)

// spreadFleet runs n jobs on one schedule on each of the replicas ids,
// each run sleeping d.
func spreadFleet(t *testing.T, n int, d time.Duration, so scheduler.Options, wrap func(replica string, run func(ctx context.Context) error) func(ctx context.Context) error, ids ...string) (*jobRuns, []*replica) {
	t.Helper()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	runs := newJobRuns()
	var reps []*replica
	for _, id := range ids {
		o := so
		o.Logger = testLogger(t, id).Level(zerolog.WarnLevel) // logging 60 runs a tick costs CPU the other replicas need then
		r := newReplica(t, url, lockOpts(id), o)
		run := runs.record(id, d)
		if wrap != nil {
			run = wrap(id, run)
		}
		for i := range n {
			addJob(t, r, job.Job{Name: fmt.Sprintf("job%02d", i), Schedule: "*/3 * * * * *", Run: run})
		}
		reps = append(reps, r)
	}
	for _, r := range reps {
		r.start(t)
	}
	return runs, reps
}

// byTick groups runs by tick, in tick order.
func byTick(runs []jobRun) ([]time.Time, map[time.Time][]jobRun) {
	m := map[time.Time][]jobRun{}
	for _, x := range runs {
		m[x.tick] = append(m[x.tick], x)
	}
	ticks := make([]time.Time, 0, len(m))
	for tick := range m {
		ticks = append(ticks, tick)
	}
	slices.SortFunc(ticks, func(a, b time.Time) int { return a.Compare(b) })
	return ticks, m
}

// awaitTicks waits until every one of n jobs has started at `complete`
// ticks after the first tick seen, and returns those ticks.
func awaitTicks(t *testing.T, runs *jobRuns, n, complete int) []time.Time {
	t.Helper()
	var ticks []time.Time
	waitFor(t, time.Duration(complete+2)*4*time.Second, fmt.Sprintf("%d ticks with all %d jobs", complete, n), func() bool {
		all, m := byTick(runs.all())
		if len(all) < complete+1 {
			return false
		}
		ticks = all[1 : complete+1]
		return len(m[ticks[complete-1]]) >= n
	})
	return ticks
}

// 30 jobs on one schedule over 3 replicas: each tick of each job runs
// exactly once, and the runs are spread: no replica takes more than 14 of
// the 30 (about 10 expected).
//
// Not parallel: the spreading staggers replicas by 20 ms per rank, which
// CPU contention blurs. Under the race detector the 90 lock attempts at a
// tick saturate two cores for most of a second (the embedded server misses
// 500 ms replies), so the split is only logged there.
func TestSpreadOverReplicas(t *testing.T) {
	const jobs, most = 30, 14
	runs, reps := spreadFleet(t, jobs, 1500*time.Millisecond, scheduler.Options{}, nil, "r1", "r2", "r3")
	ticks := awaitTicks(t, runs, jobs, 2)
	for _, r := range reps {
		r.stop()
	}
	_, m := byTick(runs.all())
	for _, tick := range ticks {
		perJob, perReplica := map[string]int{}, map[string]int{}
		for _, x := range m[tick] {
			perJob[x.job]++
			perReplica[x.replica]++
		}
		for name, k := range perJob {
			if k != 1 {
				t.Errorf("tick %v: %s ran %d times", tick, name, k)
			}
		}
		if len(perJob) != jobs {
			t.Errorf("tick %v: %d of %d jobs ran", tick, len(perJob), jobs)
		}
		for id, k := range perReplica {
			if raceEnabled {
				t.Logf("tick %v: %s ran %d of %d jobs (race detector: not checked)", tick, id, k, jobs)
				continue
			}
			if k > most {
				t.Errorf("tick %v: %s ran %d of %d jobs (%v); want at most %d", tick, id, k, jobs, perReplica, most)
			}
		}
	}
}

// MaxConcurrentRuns 5 on each of 3 replicas, 15 jobs due together: all
// start within 2 s of the tick and no replica runs more than 5 at once.
func TestMaxConcurrentRuns(t *testing.T) {
	t.Parallel()
	const jobs, limit = 15, 5
	var mu sync.Mutex
	peak := map[string]int32{}
	current := map[string]*atomic.Int32{}
	ids := []string{"r1", "r2", "r3"}
	for _, id := range ids {
		current[id] = &atomic.Int32{}
	}
	count := func(id string, run func(ctx context.Context) error) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			n := current[id].Add(1)
			defer current[id].Add(-1)
			mu.Lock()
			peak[id] = max(peak[id], n)
			mu.Unlock()
			return run(ctx)
		}
	}
	runs, reps := spreadFleet(t, jobs, 1500*time.Millisecond, scheduler.Options{MaxConcurrentRuns: limit}, count, ids...)
	ticks := awaitTicks(t, runs, jobs, 2)
	for _, r := range reps {
		r.stop()
	}
	_, m := byTick(runs.all())
	for _, tick := range ticks {
		for _, x := range m[tick] {
			if d := x.start.Sub(tick); d > 2*time.Second {
				t.Errorf("tick %v: %s started %v after the tick on %s", tick, x.job, d, x.replica)
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for id, p := range peak {
		if p > limit {
			t.Errorf("%s ran %d jobs at once; MaxConcurrentRuns is %d", id, p, limit)
		}
	}
}

// The limit itself: one replica with MaxConcurrentRuns 2 and four 1 s jobs
// due together runs two at once, never more, and the other two as slots
// free up, within the same tick.
func TestMaxConcurrentRunsQueues(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	r := newReplica(t, url, lockOpts("solo"), scheduler.Options{MaxConcurrentRuns: 2})
	var current, peak atomic.Int32
	var mu sync.Mutex
	ran := map[string]time.Time{} // job -> tick it ran
	for i := range 4 {
		name := fmt.Sprintf("q%d", i)
		err := r.s.Add(job.Job{Name: name, Schedule: "*/5 * * * * *", Run: func(ctx context.Context) error {
			n := current.Add(1)
			defer current.Add(-1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			info, _ := job.FromContext(ctx)
			mu.Lock()
			if _, ok := ran[name]; !ok {
				ran[name] = info.Tick
			}
			mu.Unlock()
			time.Sleep(time.Second)
			return nil
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
	r.start(t)
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		n := len(ran)
		mu.Unlock()
		if n == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of 4 jobs ran within 20 s", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if p := peak.Load(); p != 2 {
		t.Errorf("peak concurrency %d, want exactly the limit 2", p)
	}
	mu.Lock()
	defer mu.Unlock()
	first := ran["q0"]
	for name, tick := range ran {
		if !tick.Equal(first) {
			t.Errorf("%s ran for tick %v, q0 for %v: the queued jobs must run their tick, not skip it", name, tick, first)
		}
	}
}
