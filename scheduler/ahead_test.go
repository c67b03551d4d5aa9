package scheduler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/scheduler"
)

// burstJobs is how many jobs addBurst adds: enough that claiming them at
// the tick is slow, so the replica claims ahead.
const burstJobs = 100

// addBurst adds burstJobs jobs due every second, which do nothing.
func addBurst(t *testing.T, r *replica) {
	t.Helper()
	for i := range burstJobs {
		addJob(t, r, job.Job{Name: fmt.Sprintf("burst-%03d", i), Schedule: "* * * * * *",
			Run: func(context.Context) error { return nil }})
	}
}

// A replica with many jobs due at each second claims their ticks before
// they are due, and their runs start at the tick, never before: the job's
// record that claims a tick is stored before the tick (by the NATS
// server's clock, which stamps it), while the job's function, and the
// start the history records, are at the tick or after it.
func TestClaimAheadStartsAtTheTick(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const name = "ontime"
	claimedAt := watchClaims(ctx, t, url, name, nil)
	starts := newRecorder()
	var reps []*replica
	for _, id := range []string{"r1", "r2"} {
		r := newReplica(t, url, lockOpts(id), scheduler.Options{Logger: testLogger(t, id)})
		addJob(t, r, job.Job{Name: name, Schedule: "* * * * * *", Run: startRecorder(id, starts, 0)})
		addBurst(t, r)
		reps = append(reps, r)
		r.start(t)
	}
	const ticks = 8
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
	// all are once the pace has seen the burst's claims, unless the
	// machine is too loaded to claim within the lead.
	if ahead == 0 {
		t.Errorf("none of %d ticks was claimed before it was due", ticks)
	}
	for _, r := range runsOf(t, reps[0], name) {
		if r.Status != scheduler.StatusMissed && r.Start.Before(r.Tick) {
			t.Errorf("history records tick %v started at %v, before it", r.Tick, r.Start)
		}
	}
}

// A replica shut down gracefully after it has claimed a tick ahead, before
// the tick, still runs that tick, at the tick: the claim is its alone, and
// no other replica could run it until the lease ends. Run returns once it
// has run and recorded it. While it claims ahead, cronlock_claim_lead_seconds
// says by how much.
func TestShutdownInTheLeadRunsTheClaimedTick(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const name = "lead"
	inLead := make(chan time.Time, 1)
	watchClaims(ctx, t, url, name, func(tick, at time.Time) {
		if at.Before(tick) {
			select {
			case inLead <- tick:
			default:
			}
		}
	})
	starts := newRecorder()
	reg := prometheus.NewRegistry()
	r := newReplica(t, url, lockOpts("r1"), scheduler.Options{Logger: testLogger(t, "r1"), Registerer: reg})
	addJob(t, r, job.Job{Name: name, Schedule: "* * * * * *", Run: startRecorder("r1", starts, 0)})
	addBurst(t, r)
	r.start(t)
	var tick time.Time
	select {
	case tick = <-inLead:
	case <-time.After(10 * time.Second):
		t.Fatal("no tick claimed ahead within 10 s")
	}
	if lead := series(t, reg, "cronlock_claim_lead_seconds")[""]; lead <= 0 || lead > 0.5 {
		t.Errorf("cronlock_claim_lead_seconds = %v while claiming ahead, want in (0, 0.5]", lead)
	}
	r.stop() // graceful: waits for the runs in progress
	if time.Now().Before(tick) {
		t.Fatalf("Run returned before the claimed tick %v", tick)
	}
	var ran bool
	for _, x := range starts.all() {
		if x.tick.Equal(tick) {
			ran = true
			if x.start.Before(tick) {
				t.Errorf("tick %v started %v early", tick, tick.Sub(x.start))
			}
		}
	}
	if !ran {
		t.Fatalf("the tick %v claimed before the shutdown did not run; ran %v", tick, starts.all())
	}
	for _, h := range runsOf(t, r, name) {
		if h.Tick.Equal(tick) && h.Status != scheduler.StatusSucceeded {
			t.Errorf("tick %v recorded %s, want %s", tick, h.Status, scheduler.StatusSucceeded)
		}
	}
}

// watchClaims follows the job's record in the history bucket and returns
// a lookup of when (the server's stamp) each tick was first claimed. It
// calls onClaim, if not nil, with each tick when first seen claimed.
func watchClaims(ctx context.Context, t *testing.T, url, name string, onClaim func(tick, at time.Time)) func(tick time.Time) (time.Time, bool) {
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
			_, seen := first[st.LastTick.Unix()]
			if !seen {
				first[st.LastTick.Unix()] = e.Created()
			}
			mu.Unlock()
			if !seen && onClaim != nil {
				onClaim(st.LastTick, e.Created())
			}
		}
	}()
	return func(tick time.Time) (time.Time, bool) {
		mu.Lock()
		defer mu.Unlock()
		at, ok := first[tick.Unix()]
		return at, ok
	}
}

// leadRig starts a NATS server and one replica (not started) with job
// name, whose runs starts records, and a burst of jobs due with it, so
// that the replica claims ahead. ctx ends with the test.
func leadRig(t *testing.T, name string) (context.Context, string, *replica, *recorder) {
	t.Helper()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	starts := newRecorder()
	r := newReplica(t, url, lockOpts("r1"), scheduler.Options{Logger: testLogger(t, "r1")})
	addJob(t, r, job.Job{Name: name, Schedule: "* * * * * *", Run: startRecorder("r1", starts, 0)})
	addBurst(t, r)
	return ctx, url, r, starts
}

// A cancel request that reaches a tick claimed ahead, before the tick,
// ends it without starting it: the job's function is not called, and the
// tick is recorded cancelled by whoever asked.
func TestCancelInTheLeadDoesNotStartTheRun(t *testing.T) {
	t.Parallel()
	const name, tries = "cancelled", 3
	ctx, url, r, starts := leadRig(t, name)
	asked := make(chan time.Time, tries)
	watchClaims(ctx, t, url, name, func(tick, at time.Time) {
		if !at.Before(tick) || len(asked) == tries {
			return
		}
		if _, err := r.s.Cancel(ctx, name, scheduler.CancelOptions{By: "test", Tick: tick}); err != nil {
			t.Logf("cancel of %v: %v", tick, err)
			return
		}
		asked <- tick
	})
	r.start(t)
	var ticks []time.Time
	for len(ticks) < tries {
		select {
		case tick := <-asked:
			ticks = append(ticks, tick)
		case <-time.After(15 * time.Second):
			t.Fatalf("only %d ticks claimed ahead and cancelled within 15 s", len(ticks))
		}
	}
	last := ticks[len(ticks)-1]
	waitFor(t, 10*time.Second, "the last cancelled tick recorded", func() bool {
		for _, h := range runsOf(t, r, name) {
			if h.Tick.Equal(last) && h.Status != scheduler.StatusRunning {
				return true
			}
		}
		return false
	})
	ran := map[int64]bool{}
	for _, x := range starts.all() {
		ran[x.tick.Unix()] = true
	}
	history := map[int64]scheduler.Run{}
	for _, h := range runsOf(t, r, name) {
		history[h.Tick.Unix()] = h
	}
	notStarted := 0
	for _, tick := range ticks {
		h := history[tick.Unix()]
		if h.Status != scheduler.StatusCancelled || h.By != "test" {
			t.Errorf("tick %v recorded %s by %q, want cancelled by test", tick, h.Status, h.By)
		}
		if h.End.Before(h.Start) {
			t.Errorf("tick %v recorded ending %v before its start", tick, h.Start.Sub(h.End))
		}
		if !ran[tick.Unix()] {
			notStarted++
		}
	}
	// The request lands tens of ms before the tick; on a machine too
	// loaded to deliver it in time the run starts and is cancelled then.
	if notStarted == 0 {
		t.Errorf("every one of %d ticks cancelled in the lead started its run", tries)
	}
}

// A suspension that reaches a tick claimed ahead, before the tick, keeps
// it from starting, as it would have kept a claim at the tick from
// claiming it: the job's function is not called, and the tick is
// recorded skipped with reason suspended.
func TestSuspendInTheLeadSkipsTheClaimedTick(t *testing.T) {
	t.Parallel()
	const name, tries = "suspended", 3
	ctx, url, r, starts := leadRig(t, name)
	_, js := natstest.Connect(t, url)
	h, err := scheduler.OpenHistory(ctx, js, scheduler.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var armed atomic.Bool
	armed.Store(true)
	asked := make(chan time.Time, 1)
	watchClaims(ctx, t, url, name, func(tick, at time.Time) {
		if !at.Before(tick) || !armed.Load() {
			return
		}
		if err := h.Suspend(ctx, name, "test", time.Now()); err != nil {
			t.Logf("suspend before %v: %v", tick, err)
			return
		}
		armed.Store(false)
		asked <- tick
	})
	r.start(t)
	for try := 1; ; try++ {
		var tick time.Time
		select {
		case tick = <-asked:
		case <-time.After(15 * time.Second):
			t.Fatalf("try %d: no tick claimed ahead within 15 s", try)
		}
		var entry scheduler.Run
		waitFor(t, 10*time.Second, "the tick suspended in its lead recorded", func() bool {
			for _, x := range runsOf(t, r, name) {
				if x.Tick.Equal(tick) && x.Status != scheduler.StatusRunning {
					entry = x
					return true
				}
			}
			return false
		})
		started := slices.ContainsFunc(starts.all(), func(x rec) bool { return x.tick.Equal(tick) })
		if entry.Status == scheduler.StatusSkipped {
			if started {
				t.Fatalf("tick %v recorded skipped, but its run started", tick)
			}
			if entry.Reason != scheduler.ReasonSuspended || !entry.Start.IsZero() {
				t.Fatalf("tick %v recorded %+v, want skipped for suspended, without a start", tick, entry)
			}
			return
		}
		// The suspension lands tens of ms before the tick; on a machine
		// too loaded to deliver it in time the run starts, and goes on.
		if !started || try == tries {
			t.Fatalf("try %d: tick %v recorded %s (started %v), want skipped for suspended", try, tick, entry.Status, started)
		}
		if err := h.Resume(ctx, name); err != nil {
			t.Fatal(err)
		}
		armed.Store(true)
	}
}
