package scheduler_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/scheduler"
)

// A replica cut off from NATS across several ticks of an every-2-s job with
// a 10 s starting deadline runs the latest missed tick once, soon after the
// connection is back, and its claim records the earlier ones as missed
// for an outage: whether the cut came between ticks or during a run (which
// then cannot record its result).
func TestOutageCatchUp(t *testing.T) {
	t.Parallel()
	t.Run("between ticks", func(t *testing.T) { t.Parallel(); outageCatchUp(t, false, 10*time.Second) })
	t.Run("during a run", func(t *testing.T) { t.Parallel(); outageCatchUp(t, true, 10*time.Second) })
}

// Without a starting deadline nothing is caught up, but the first claim
// after the outage still records the ticks it missed as an outage.
func TestOutageWithoutCatchUp(t *testing.T) {
	t.Parallel()
	outageCatchUp(t, false, 0)
}

func outageCatchUp(t *testing.T, duringRun bool, deadline time.Duration) {
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	proxy := natstest.NewProxy(t, strings.TrimPrefix(url, "nats://"))
	const name, period = "every.two", 2 * time.Second
	starts := newRecorder()
	reg := prometheus.NewRegistry()
	r := newReplica(t, proxy.URL(), lockOpts("cut"), scheduler.Options{Registerer: reg, Logger: testLogger(t, "cut")})
	t.Cleanup(proxy.Thaw)
	record := startRecorder("cut", starts, 0)
	cutting := make(chan time.Time, 1)
	cutNow := func() {
		proxy.Freeze()
		proxy.Cut()
		cutting <- time.Now()
	}
	addJob(t, r, job.Job{Name: name, Schedule: "*/2 * * * * *", StartingDeadline: deadline, Run: func(ctx context.Context) error {
		if duringRun && len(starts.all()) == 0 {
			defer cutNow() // before the run's result is recorded
		}
		return record(ctx)
	}})
	r.start(t)
	if !duringRun {
		starts.next(t, 10*time.Second)
		// Cut halfway between ticks, once the last run is recorded.
		waitFor(t, 10*time.Second, "the last run recorded, halfway to the next tick", func() bool {
			all := starts.all()
			_, last := entriesOf(runsOf(t, r, name), all[len(all)-1].tick)
			phase := time.Since(time.Now().Truncate(period))
			return last.Succeeded() && phase >= period/2 && phase < period*3/4
		})
		cutNow()
	}
	var cut time.Time
	select {
	case cut = <-cutting:
	case <-time.After(10 * time.Second):
		t.Fatal("no run before the cut")
	}
	// Restore 800 ms after a tick, at least two ticks later, once that
	// tick's own attempt (AcquireTimeout 500 ms) has given up: the latest
	// missed tick is then that one, and the next is 1.2 s away.
	latest := cut.Add(2 * period).Truncate(period).Add(period)
	time.Sleep(time.Until(latest.Add(800 * time.Millisecond))) // the outage itself
	proxy.Thaw()
	restored := time.Now()

	var got rec
	waitFor(t, 10*time.Second, "a run after the outage", func() bool {
		all := starts.all()
		got = all[len(all)-1]
		return got.start.After(cut)
	})
	if deadline == 0 {
		r.stop()
		if want := latest.Add(period); !got.tick.Equal(want) {
			t.Errorf("first run after the outage: tick %v; want the next one, %v (no starting deadline: no catch-up)", got.tick, want)
		}
		missed := withStatus(runsOf(t, r, name), scheduler.StatusMissed)
		if len(missed) != 1 || missed[0].Reason != scheduler.ReasonOutage {
			t.Errorf("missed entries %+v, want one with reason %q", missed, scheduler.ReasonOutage)
		}
		return
	}
	if !got.tick.Equal(latest) {
		t.Fatalf("first run after the outage (cut %v, restored %v): tick %v started %v; want the latest missed one, %v", cut.Format(time.StampMilli), restored.Format(time.StampMilli), got.tick, got.start.Format(time.StampMilli), latest)
	}
	if d := got.start.Sub(restored); d > 2500*time.Millisecond {
		t.Errorf("the latest missed tick started %v after the connection was restored", d)
	}
	waitFor(t, 10*time.Second, "the next tick's run", func() bool {
		all := starts.all()
		return all[len(all)-1].tick.After(latest)
	})
	r.stop()
	if n := starts.ran(latest); n != 1 {
		t.Errorf("tick %v ran %d times, want once", latest, n)
	}
	missed := withStatus(runsOf(t, r, name), scheduler.StatusMissed)
	if len(missed) != 1 || missed[0].Reason != scheduler.ReasonOutage || !missed[0].Tick.Before(latest) {
		t.Fatalf("missed entries %+v, want one with reason %q before tick %v", missed, scheduler.ReasonOutage, latest)
	}
	if got := metricSum(t, "cronlock_ticks_missed_total", map[string]string{"job": name, "reason": string(scheduler.ReasonOutage)}, reg); got != float64(missed[0].Ticks) {
		t.Errorf("cronlock_ticks_missed_total{reason=outage} = %v, want %d", got, missed[0].Ticks)
	}
}
