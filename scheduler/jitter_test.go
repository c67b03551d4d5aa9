package scheduler_test

import (
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/scheduler"
)

// jitterSlack is how far from tick + TickJitter a run may start.
const jitterSlack = 150 * time.Millisecond

// A job with Jitter starts at its tick plus job.TickJitter(name, tick,
// Jitter), whichever replica runs it.
//
// Not parallel: it measures start times.
func TestJitterDelaysEachTick(t *testing.T) {
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	const jitter = 2 * time.Second
	names := []string{"jittery.a", "jittery.b"}
	starts := newJobRuns()
	for _, id := range []string{"r1", "r2"} {
		r := newReplica(t, url, lockOpts(id), scheduler.Options{Logger: testLogger(t, id)})
		for _, name := range names {
			addJob(t, r, job.Job{Name: name, Schedule: "*/3 * * * * *", Jitter: jitter, Run: starts.record(id, 0)})
		}
		r.start(t)
	}
	for range 2 * len(names) {
		x := starts.next(t, 10*time.Second)
		want := x.tick.Add(job.TickJitter(x.job, x.tick, jitter))
		if d := x.start.Sub(want); d < -jitterSlack || d > jitterSlack {
			t.Errorf("%s tick %v started at %v on %s: %v from tick + jitter (%v)", x.job, x.tick, x.start.Format(time.StampMilli), x.replica, d, want.Sub(x.tick))
		}
	}
}
