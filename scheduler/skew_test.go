package scheduler_test

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/scheduler"
)

// maxStartDelay bounds how late after its tick (by the server's clock) a run
// starts: generous on a loaded machine.
const maxStartDelay = 100 * time.Millisecond

// The clock-skew contract: three replicas with clocks −3 s, 0 and
// +3 s. No run starts before its tick by the server's clock (the embedded
// server shares the test's clock); none starts more than 100 ms after it;
// no tick is missed when the fast replica joins late. The fast replica
// reports its offset (the server's clock minus its own) as about −3 s.
//
// Not parallel: it measures start delays.
func TestClockSkewFollowsServerClock(t *testing.T) {
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	const name = "skewed"
	starts := newRecorder()
	mk := func(id string, offset time.Duration, reg prometheus.Registerer) *replica {
		r := newReplica(t, url, lockOpts(id), scheduler.Options{Clock: skewed(offset), Registerer: reg, Logger: testLogger(t, id)})
		addJob(t, r, job.Job{Name: name, Schedule: "* * * * * *", Run: startRecorder(id, starts, 10*time.Millisecond)})
		return r
	}
	slow, exact := mk("slow", -3*time.Second, nil), mk("exact", 0, nil)
	fastReg := prometheus.NewRegistry()
	fast := mk("fast", 3*time.Second, fastReg)
	slow.start(t)
	exact.start(t)
	for range 3 {
		starts.next(t, 10*time.Second)
	}
	fast.start(t)
	joined := time.Now()
	waitFor(t, 15*time.Second, "6 ticks after the fast replica joined", func() bool {
		n := 0
		for _, x := range starts.all() {
			if x.tick.After(joined) {
				n++
			}
		}
		return n >= 6
	})
	waitFor(t, 10*time.Second, "cronlock_clock_offset_seconds ≈ −3 on the fast replica", func() bool {
		return math.Abs(metricSum(t, "cronlock_clock_offset_seconds", nil, fastReg)+3) <= 0.5
	})
	for _, r := range []*replica{slow, exact, fast} {
		r.stop()
	}

	all := starts.all()
	seen := map[time.Time]string{}
	first, last := all[0].tick, all[0].tick
	for _, x := range all {
		if prev, dup := seen[x.tick]; dup {
			t.Errorf("tick %v ran twice: on %s and on %s", x.tick, prev, x.replica)
		}
		seen[x.tick] = x.replica
		first, last = minTime(first, x.tick), maxTime(last, x.tick)
		switch d := x.start.Sub(x.tick); {
		case d < 0:
			t.Errorf("tick %v started %v early on %s", x.tick, -d, x.replica)
		case d > maxStartDelay:
			t.Errorf("tick %v started %v late on %s", x.tick, d, x.replica)
		}
	}
	for tick := first; !tick.After(last); tick = tick.Add(time.Second) {
		if _, ok := seen[tick]; !ok {
			t.Errorf("tick %v ran on no replica", tick)
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
