package scheduler_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/scheduler"
)

// A tick is claimed before it is due, and its run starts at the tick, never
// before: the job's record that claims a tick is stored before the tick (by
// the NATS server's clock, which stamps it), while the job's function, and
// the start the history records, are at the tick or after it.
func TestClaimAheadStartsAtTheTick(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const name = "ontime"
	claimedAt := watchClaims(ctx, t, url, name)
	starts := newRecorder()
	var reps []*replica
	for _, id := range []string{"r1", "r2"} {
		r := newReplica(t, url, lockOpts(id), scheduler.Options{Logger: testLogger(t, id)})
		addJob(t, r, job.Job{Name: name, Schedule: "* * * * * *", Run: startRecorder(id, starts, 0)})
		reps = append(reps, r)
		r.start(t)
	}
	const ticks = 5
	var got []rec
	for len(got) < ticks {
		got = append(got, starts.next(t, 10*time.Second))
	}
	ahead := 0
	for _, x := range got {
		if x.start.Before(x.tick) {
			t.Errorf("tick %v started %v before it was due", x.tick, x.tick.Sub(x.start))
		}
		if at, ok := claimedAt(x.tick); ok && at.Before(x.tick) {
			ahead++
		}
	}
	// Without claiming ahead no claim is stored before its tick; with it
	// all are, unless the machine is too loaded to claim in 100 ms.
	if ahead == 0 {
		t.Errorf("none of %d ticks was claimed before it was due", ticks)
	}
	for _, r := range runsOf(t, reps[0], name) {
		if r.Status != scheduler.StatusMissed && r.Start.Before(r.Tick) {
			t.Errorf("history records tick %v started at %v, before it", r.Tick, r.Start)
		}
	}
}

// watchClaims follows the job's record in the history bucket and returns
// a lookup of when (the server's stamp) each tick was first claimed.
func watchClaims(ctx context.Context, t *testing.T, url, name string) func(tick time.Time) (time.Time, bool) {
	t.Helper()
	_, js := natstest.Connect(t, url)
	if _, err := scheduler.OpenHistory(ctx, js, scheduler.HistoryOptions{}); err != nil {
		t.Fatal(err) // creates the bucket
	}
	kv, err := js.KeyValue(ctx, scheduler.DefaultHistoryBucket)
	if err != nil {
		t.Fatal(err)
	}
	w, err := kv.Watch(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	first := map[int64]time.Time{}
	go func() {
		for e := range w.Updates() {
			if e == nil {
				continue
			}
			var st struct {
				LastTick time.Time `json:"last_tick"`
			}
			if json.Unmarshal(e.Value(), &st) != nil || st.LastTick.IsZero() {
				continue
			}
			mu.Lock()
			if _, ok := first[st.LastTick.Unix()]; !ok {
				first[st.LastTick.Unix()] = e.Created()
			}
			mu.Unlock()
		}
	}()
	return func(tick time.Time) (time.Time, bool) {
		mu.Lock()
		defer mu.Unlock()
		at, ok := first[tick.Unix()]
		return at, ok
	}
}
