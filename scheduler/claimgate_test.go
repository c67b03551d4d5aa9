package scheduler_test

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/scheduler"
)

// Jobs falling due together (hourly jobs at minute 0) run once each, all
// but a few that NATS fails, when there are more of them than the server stores
// within AcquireTimeout: each replica sends only so many claims at a
// time, and the others wait for a place before their timeout starts, in
// the replica's queue (cronlock_claims_waiting) rather than on a goroutine
// each. Sent all at once (no bound) with a 100 ms timeout, most of these
// claims timed out.
//
// Not parallel: the burst takes both cores for a second, and the leases of
// the tests beside it (1 s) would lose their renewals.
func TestBurstOfDueJobsRunsEachOnce(t *testing.T) {
	const (
		jobs     = 1000
		inFlight = 8
		every    = 4 // seconds between the bursts
	)
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	var mu sync.Mutex
	runs := map[string]map[int64]int{} // job → tick → runs
	var burst int64                    // the tick checked, set before the replicas start
	ranBurst, allRan := 0, make(chan struct{})
	regs := make([]*prometheus.Registry, 2)
	reps := make([]*replica, 2)
	for i := range reps {
		regs[i] = prometheus.NewRegistry()
		reps[i] = newReplica(t, url, lockOpts(fmt.Sprintf("burst-%d", i)), scheduler.Options{
			AcquireTimeout: 300 * time.Millisecond, Registerer: regs[i], Logger: testLogger(t, fmt.Sprintf("burst-%d", i))})
		scheduler.SetClaimsInFlight(reps[i].s, inFlight)
		for j := range jobs {
			name := fmt.Sprintf("burst.%03d", j)
			err := reps[i].s.Add(job.Job{Name: name, Schedule: fmt.Sprintf("*/%d * * * * *", every), Run: func(ctx context.Context) error {
				info, _ := job.FromContext(ctx)
				mu.Lock()
				if runs[name] == nil {
					runs[name] = map[int64]int{}
				}
				runs[name][info.Tick.Unix()]++
				if info.Tick.Unix() == burst && runs[name][burst] == 1 {
					if ranBurst++; ranBurst == jobs {
						close(allRan)
					}
				}
				mu.Unlock()
				return nil
			}})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	// The first burst after both replicas run: a tick at least a second
	// after the start, so that neither replica is still starting.
	burst = time.Now().Add(time.Second).Truncate(every * time.Second).Add(every * time.Second).Unix()
	for _, r := range reps {
		r.start(t)
	}
	// Sampled until every job has run the burst's tick (or the deadline:
	// a tick whose claim timed out runs nowhere).
	deadline := time.NewTimer(time.Until(time.Unix(burst, 0)) + 20*time.Second)
	defer deadline.Stop()
	sample := time.NewTicker(20 * time.Millisecond)
	defer sample.Stop()
	var queued float64
	onGoroutines := 0
	stacks := make([]byte, 64<<20)
sampling:
	for i := 0; ; i++ {
		select {
		case <-allRan:
			break sampling
		case <-deadline.C:
			break sampling
		case <-sample.C:
		}
		queued = max(queued, metricSum(t, "cronlock_claims_waiting", nil, regs...))
		if i%5 == 0 { // every 100 ms: a dump of every goroutine stops the world
			n := runtime.Stack(stacks, true)
			onGoroutines = max(onGoroutines, bytes.Count(stacks[:n], []byte("(*claimGate).enter(")))
		}
	}
	for _, r := range reps {
		r.stop()
	}
	mu.Lock()
	defer mu.Unlock()
	var missing, twice []string
	for j := range jobs {
		name := fmt.Sprintf("burst.%03d", j)
		switch n := runs[name][burst]; {
		case n == 0:
			missing = append(missing, name)
		case n > 1:
			twice = append(twice, name)
		}
	}
	if queued == 0 {
		t.Error("cronlock_claims_waiting stayed 0 through the burst: no tick waited for a place")
	}
	// The due ticks wait in the dispatcher's queue; only a claim made on a
	// worker (a catch-up, a rerun: none here) waits for its place on a
	// goroutine. Waiting on goroutines, 63–1,618 of this burst's did at once.
	if onGoroutines > inFlight {
		t.Errorf("%d goroutines waiting for a place at once, want at most %d: the due ticks wait on goroutines, not in the queue", onGoroutines, inFlight)
	}
	if len(twice) > 0 {
		t.Errorf("%d jobs ran the burst's tick more than once: %v", len(twice), twice)
	}
	// A claim that waited its place can still meet a slow server (the race
	// detector, a loaded CI machine) and time out; when its write was
	// stored all the same, no replica runs that tick (a tick runs at most
	// once). So a tick may be missing only for a claim that timed out, and
	// only a few may time out. (Sent all at once with AcquireTimeout 100 ms,
	// 808–984 of these claims timed out; with the bound, a loaded CI machine
	// still timed out 8 at 100 ms, whose ticks were missed: hence 300 ms.)
	timedOut := metricSum(t, "cronlock_ticks_skipped_total", map[string]string{"reason": "error"}, regs...)
	if float64(len(missing)) > timedOut {
		t.Errorf("%d of %d jobs did not run the burst's tick %s, and only %v claims timed out: %.10v…", len(missing), jobs, time.Unix(burst, 0).Format(time.TimeOnly), timedOut, missing)
	}
	if timedOut > jobs/20 {
		t.Errorf("%v ticks skipped because NATS failed, want at most %d: the claims waited for NATS instead of for a place", timedOut, jobs/20)
	}
}
