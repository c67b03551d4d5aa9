package scheduler_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/scheduler"
)

// A result whose write NATS applied but whose reply was lost with its
// connection (the server the replica was connected to killed) is settled
// as soon as the client reconnects, not when the write's own timeout (5 s)
// ends, while the job's next ticks wait for it; and it is counted once:
// the retry finds the result recorded and writes nothing, so the failure
// the first write stored is not counted again (which would have suspended
// this job, SuspendAfterFailures 2, after its one failure).
func TestResultWithALostReplyIsSettledOnReconnect(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	proxy := natstest.NewProxy(t, strings.TrimPrefix(url, "nats://"))
	t.Cleanup(proxy.Thaw)
	const name = "lost.reply"
	results := make(chan scheduler.Run, 100)
	r := newReplica(t, proxy.URL(), lockOpts("r1"), scheduler.Options{Logger: testLogger(t, "r1"),
		OnResult: func(run scheduler.Run) { results <- run }})
	var ran atomic.Bool
	failed := make(chan time.Time, 1)
	addJob(t, r, job.Job{Name: name, Schedule: "* * * * * *", SuspendAfterFailures: 2, Run: func(ctx context.Context) error {
		if ran.Swap(true) {
			return nil
		}
		info, _ := job.FromContext(ctx)
		failed <- info.Tick
		proxy.FreezeReplies() // the result's write arrives; its reply is held
		return errors.New("the first run fails")
	}})
	r.start(t)
	var tick time.Time
	select {
	case tick = <-failed:
	case <-time.After(10 * time.Second):
		t.Fatal("no run")
	}

	state, _ := jobState(t, url, name)
	waitFor(t, 5*time.Second, "the failed run stored by its first write", func() bool {
		_, last := entriesOf(state().Runs, tick)
		return last.Status == scheduler.StatusFailed
	})
	proxy.Drop() // the connection drops with the reply
	cut := time.Now()

	var got scheduler.Run
	select {
	case got = <-results:
	case <-time.After(10 * time.Second):
		t.Fatal("the failed run's result was never settled")
	}
	settled := time.Since(cut)
	if !got.Tick.Equal(tick) || got.Status != scheduler.StatusFailed {
		t.Fatalf("first result %+v, want the failed run of tick %v", got, tick)
	}
	if settled > 2500*time.Millisecond {
		t.Errorf("the result was settled %v after the reconnect; want well before its write's 5 s timeout", settled)
	}
	waitFor(t, 10*time.Second, "a run after the failed one (or a suspension)", func() bool {
		st := state()
		return len(withStatus(st.Runs, scheduler.StatusSucceeded)) > 0 || st.Suspended != nil
	})
	r.stop()
	st := state()
	if statuses, _ := entriesOf(st.Runs, tick); len(statuses) != 1 {
		t.Errorf("tick %v recorded %v, want one entry", tick, statuses)
	}
	if st.Suspended != nil || st.Failures != 0 {
		t.Errorf("after one failure then a success: suspended %+v, %d failures in a row; want neither (the failure counted twice?)", st.Suspended, st.Failures)
	}
}

// A claim that NATS stored but whose reply was lost with its connection
// is the replica's own once the client reconnects: it looks at the record
// at once, finds its own hold there, and runs the tick, instead of giving
// up on the write at its timeout (the tick then missed for an outage by
// every replica, its own stored claim freed in the background).
func TestClaimWithALostReplyRunsOnReconnect(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	proxy := natstest.NewProxy(t, strings.TrimPrefix(url, "nats://"))
	t.Cleanup(proxy.Thaw)
	const name, period = "lost.claim", 2 * time.Second
	starts := newRecorder()
	r := newReplica(t, proxy.URL(), lockOpts("r1"), scheduler.Options{Logger: testLogger(t, "r1")})
	addJob(t, r, job.Job{Name: name, Schedule: "*/2 * * * * *", Run: startRecorder("r1", starts, 0)})
	r.start(t)
	first := starts.next(t, 10*time.Second)

	state, _ := jobState(t, url, name)
	// Silence the replies a quarter of the way to the next tick, once the
	// first run is recorded: the next tick's claim arrives, its reply not.
	waitFor(t, 10*time.Second, "the first run recorded, before the next tick", func() bool {
		_, last := entriesOf(state().Runs, first.tick)
		phase := time.Since(time.Now().Truncate(period))
		return last.Succeeded() && phase >= period/4 && phase < period/2
	})
	proxy.FreezeReplies()
	tick := time.Now().Truncate(period).Add(period)
	waitFor(t, 5*time.Second, "the next tick's claim stored", func() bool {
		_, last := entriesOf(state().Runs, tick)
		return last.Status == scheduler.StatusRunning
	})
	proxy.Drop() // the connection drops with the reply
	cut := time.Now()

	got := starts.next(t, 5*time.Second)
	if !got.tick.Equal(tick) {
		t.Fatalf("the run after the cut is of tick %v; want the claimed one, %v", got.tick, tick)
	}
	if d := got.start.Sub(cut); d > time.Second {
		t.Errorf("the claimed tick started %v after the reconnect", d)
	}
	waitFor(t, 5*time.Second, "the claimed tick recorded", func() bool {
		_, last := entriesOf(state().Runs, tick)
		return last.Status != scheduler.StatusRunning
	})
	r.stop()
	statuses, last := entriesOf(state().Runs, tick)
	if len(statuses) != 1 || !last.Succeeded() {
		t.Errorf("tick %v recorded %v, want one succeeded entry", tick, statuses)
	}
	if n := starts.ran(tick); n != 1 {
		t.Errorf("tick %v ran %d times, want once", tick, n)
	}
}
