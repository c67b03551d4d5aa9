package scheduler_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/lock"
	"github.com/cronlock/cronlock/scheduler"
)

// Three replicas whose clocks differ by up to 3 s run an every-second job
// that takes ~10 ms: every tick runs exactly once, none is lost.
//
// Only the start is exempt: when the replica whose clock is ahead claims
// its first tick, the ticks the others had not reached yet fall at or
// before the last claimed tick and are recorded as missed (at most the skew,
// once). The check covers the ticks after the first three seconds.
func TestEveryTickOnceDespiteClockSkew(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	runs := newRecorder()
	var replicas []*replica
	for i, off := range []time.Duration{-1500 * time.Millisecond, 0, 1500 * time.Millisecond} {
		name := []string{"behind", "exact", "ahead"}[i]
		r := newReplica(t, url, lockOpts(name), scheduler.Options{Clock: skewed(off), Logger: testLogger(t, name)})
		err := r.s.Add(job.Job{Name: "every.second", Schedule: "* * * * * *", Run: func(ctx context.Context) error {
			info, _ := job.FromContext(ctx)
			start := time.Now()
			time.Sleep(10 * time.Millisecond)
			runs.add(rec{replica: name, tick: info.Tick, token: info.Token, start: start, end: time.Now()})
			return nil
		}})
		if err != nil {
			t.Fatal(err)
		}
		replicas = append(replicas, r)
	}
	for _, r := range replicas {
		r.start(t)
	}
	for len(runs.all()) < 14 {
		runs.next(t, 10*time.Second)
	}
	for _, r := range replicas {
		r.stop()
	}
	all := runs.all()
	seen := map[time.Time]string{}
	var first, last time.Time
	settled := all[0].tick.Add(3 * time.Second)
	for _, x := range all {
		if prev, dup := seen[x.tick]; dup {
			t.Fatalf("tick %v ran twice: on %s and on %s", x.tick, prev, x.replica)
		}
		seen[x.tick] = x.replica
		if x.tick.Before(settled) {
			continue
		}
		if first.IsZero() || x.tick.Before(first) {
			first = x.tick
		}
		if x.tick.After(last) {
			last = x.tick
		}
	}
	for tick := first; !tick.After(last); tick = tick.Add(time.Second) {
		if _, ok := seen[tick]; !ok {
			t.Errorf("tick %v ran on no replica", tick)
		}
	}
	if n := last.Sub(first)/time.Second + 1; n < 10 {
		t.Errorf("only %d ticks", n)
	}
	// Tokens increase with ticks: each run holds a newer lease.
	for i := 1; i < len(all); i++ {
		if all[i].tick.After(all[i-1].tick) && all[i].token <= all[i-1].token {
			t.Errorf("token %d for tick %v not above %d", all[i].token, all[i].tick, all[i-1].token)
		}
	}
}

// A job running for more than two leases keeps its lock (renewed in the
// background) and never overlaps with itself on another replica.
func TestLongJobKeepsLockAndNeverOverlaps(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	runs := newRecorder()
	var inside atomic.Int32
	var replicas []*replica
	for _, name := range []string{"r1", "r2"} {
		r := newReplica(t, url, lockOpts(name), scheduler.Options{})
		err := r.s.Add(job.Job{Name: "long", Schedule: "* * * * * *", Run: func(ctx context.Context) error {
			if inside.Add(1) > 1 {
				t.Error("two runs of the job at once")
			}
			defer inside.Add(-1)
			info, _ := job.FromContext(ctx)
			start := time.Now()
			select {
			case <-time.After(2500 * time.Millisecond): // 2.5 leases
			case <-ctx.Done():
				runs.add(rec{replica: name, tick: info.Tick, cause: context.Cause(ctx)})
				return ctx.Err()
			}
			runs.add(rec{replica: name, tick: info.Tick, start: start, end: time.Now()})
			return nil
		}})
		if err != nil {
			t.Fatal(err)
		}
		replicas = append(replicas, r)
		r.start(t)
	}
	for range 2 {
		if x := runs.next(t, 10*time.Second); x.cause != nil {
			t.Fatalf("run on %s cancelled: %v", x.replica, x.cause)
		}
	}
	h, err := replicas[0].s.History(context.Background(), "long")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range h {
		if r.Status == scheduler.StatusLost || r.Status == scheduler.StatusFailed {
			t.Errorf("history: %+v", r)
		}
	}
}

// A replica cut off from NATS mid-run loses its lease; the run's context is
// cancelled with lock.ErrLeaseLost, and another replica runs the next tick,
// only after that.
func TestLeaseLossCancelsRunAndAnotherReplicaTakesOver(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	proxy := natstest.NewProxy(t, strings.TrimPrefix(url, "nats://"))
	runs := newRecorder()
	run := func(name string) func(context.Context) error {
		return func(ctx context.Context) error {
			info, _ := job.FromContext(ctx)
			start := time.Now()
			if name == "cut" {
				<-ctx.Done() // runs until stopped
				runs.add(rec{replica: name, tick: info.Tick, start: start, end: time.Now(), cause: context.Cause(ctx)})
				return ctx.Err()
			}
			runs.add(rec{replica: name, tick: info.Tick, start: start, end: time.Now()})
			return nil
		}
	}
	cutReg := prometheus.NewRegistry()
	cut := newReplica(t, proxy.URL(), lockOpts("cut"), scheduler.Options{Registerer: cutReg})
	if err := cut.s.Add(job.Job{Name: "j", Schedule: "* * * * * *", Run: run("cut")}); err != nil {
		t.Fatal(err)
	}
	cut.start(t)
	// Wait until the replica behind the proxy holds the job's lock.
	observer := newReplica(t, url, lockOpts("observer"), scheduler.Options{})
	deadline := time.Now().Add(10 * time.Second)
	for {
		h, err := observer.s.Holder(context.Background(), "j")
		if err == nil && h.Owner == "cut" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first replica never took the lock")
		}
		time.Sleep(20 * time.Millisecond)
	}
	healthy := newReplica(t, url, lockOpts("healthy"), scheduler.Options{})
	if err := healthy.s.Add(job.Job{Name: "j", Schedule: "* * * * * *", Run: run("healthy")}); err != nil {
		t.Fatal(err)
	}
	healthy.start(t)
	proxy.Freeze()
	t.Cleanup(proxy.Thaw)

	first := runs.next(t, 10*time.Second)
	if first.replica != "cut" || !errors.Is(first.cause, lock.ErrLeaseLost) {
		t.Fatalf("first finished run: %s cause %v; want the cut replica cancelled by lock.ErrLeaseLost", first.replica, first.cause)
	}
	waitFor(t, 5*time.Second, "cronlock_leases_lost_total{job=j} = 1 on the cut replica", func() bool {
		return metricSum(t, "cronlock_leases_lost_total", map[string]string{"job": "j"}, cutReg) == 1
	})
	next := runs.next(t, 10*time.Second)
	if next.replica != "healthy" || !next.tick.After(first.tick) {
		t.Fatalf("next run %s tick %v, want the healthy replica on a later tick than %v", next.replica, next.tick, first.tick)
	}
	if next.start.Before(first.end) {
		t.Errorf("healthy run started %v before the cut run ended", first.end.Sub(next.start))
	}
}

func TestFailuresPanicsTimeoutsRetries(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	reg := prometheus.NewRegistry()
	r := newReplica(t, url, lockOpts("me"), scheduler.Options{Registerer: reg})
	var flaky atomic.Int32
	jobs := []job.Job{
		{Name: "panics", Schedule: "@yearly", Run: func(context.Context) error { panic("boom") }},
		{Name: "slow", Schedule: "@yearly", Timeout: 100 * time.Millisecond, Run: func(ctx context.Context) error {
			<-ctx.Done()
			return ctx.Err()
		}},
		{Name: "flaky", Schedule: "@yearly", Retries: 2, RetryBackoff: 10 * time.Millisecond, Run: func(ctx context.Context) error {
			info, _ := job.FromContext(ctx)
			if flaky.Add(1) < 3 {
				return errors.New("transient")
			}
			if info.Attempt != 3 {
				t.Errorf("attempt %d, want 3", info.Attempt)
			}
			return nil
		}},
		{Name: "fails", Schedule: "@yearly", Retries: 1, Run: func(context.Context) error { return errors.New("always") }},
	}
	for _, j := range jobs {
		if err := r.s.Add(j); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	cases := map[string]struct {
		status  scheduler.RunStatus
		errText string
	}{
		"panics": {scheduler.StatusFailed, "panic: boom"},
		"slow":   {scheduler.StatusTimeout, "job timeout after 100ms"},
		"flaky":  {scheduler.StatusSucceeded, ""},
		"fails":  {scheduler.StatusFailed, "always"},
	}
	for name, want := range cases {
		_, err := r.s.TriggerRun(ctx, name, nil)
		if (want.errText == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want.errText)) {
			t.Errorf("Trigger(%s) = %v, want error containing %q", name, err, want.errText)
		}
		h, err := r.s.History(ctx, name)
		if err != nil || len(h) != 1 {
			t.Fatalf("History(%s) = %+v, %v", name, h, err)
		}
		if h[0].Status != want.status || !h[0].Manual || h[0].Owner != "me" || h[0].Token == 0 || h[0].End.Before(h[0].Start) {
			t.Errorf("History(%s)[0] = %+v, want status %s", name, h[0], want.status)
		}
	}
	if h, _ := r.s.History(ctx, "flaky"); h[0].Attempts != 3 {
		t.Errorf("flaky attempts %d, want 3", h[0].Attempts)
	}
	if got := testutil.ToFloat64(getVec(t, reg, "cronlock_runs_total", map[string]string{"job": "panics", "status": "failed"})); got != 1 {
		t.Errorf("cronlock_runs_total{job=panics,status=failed} = %v", got)
	}
	// Locks are released after each run.
	if hs, _ := r.locker.List(ctx); len(hs) != 0 {
		t.Errorf("locks still held: %+v", hs)
	}
}

// getVec finds one metric by name and labels in a registry.
func getVec(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue metrics
				}
			}
			var v float64
			switch {
			case m.GetCounter() != nil:
				v = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				v = m.GetGauge().GetValue()
			}
			g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "x"})
			g.Set(v)
			return g
		}
	}
	t.Fatalf("metric %s%v not found", name, labels)
	return nil
}

func TestAddValidates(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	r := newReplica(t, url, lockOpts("me"), scheduler.Options{})
	ok := job.Job{Name: "a", Schedule: "@hourly", Run: func(context.Context) error { return nil }}
	if err := r.s.Add(ok); err != nil {
		t.Fatal(err)
	}
	if err := r.s.Add(ok); err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Errorf("duplicate: %v", err)
	}
	bad := ok
	bad.Name, bad.Schedule = "b", "61 * * * *"
	if err := r.s.Add(bad); err == nil || !strings.Contains(err.Error(), "schedule") {
		t.Errorf("bad schedule: %v", err)
	}
	bad.Name, bad.Schedule = "bad name", "@hourly"
	if err := r.s.Add(bad); err == nil {
		t.Error("bad name accepted")
	}
	if err := r.s.Remove("a"); err != nil {
		t.Fatal(err)
	}
	if err := r.s.Remove("a"); err == nil {
		t.Error("Remove of a missing job")
	}
	if _, err := scheduler.New(context.Background(), r.js, r.locker, scheduler.Options{AcquireTimeout: -1}); err == nil {
		t.Error("negative AcquireTimeout accepted")
	}
}

// Shutdown waits for running jobs up to the grace, then cancels them,
// releases every lock and leaves no goroutine behind.
func TestShutdownCancelsAfterGraceAndLeaksNothing(t *testing.T) {
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	_, js := natstest.Connect(t, url)
	l, err := lock.New(context.Background(), js, lockOpts("me"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s, err := scheduler.New(context.Background(), js, l, scheduler.Options{ShutdownGrace: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// Let the connection start its own long-lived goroutines (async
	// publish replies) before taking the snapshot.
	if warm, err := l.Acquire(context.Background(), "warm-up"); err == nil {
		warm.Close()
	}
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	started := make(chan struct{}, 10)
	var finished, cancelled atomic.Int32
	add := func(name string, d time.Duration) {
		err := s.Add(job.Job{Name: name, Schedule: "* * * * * *", Run: func(ctx context.Context) error {
			started <- struct{}{}
			select {
			case <-time.After(d):
				finished.Add(1)
				return nil
			case <-ctx.Done():
				cancelled.Add(1)
				return ctx.Err()
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
	add("quick", 100*time.Millisecond) // finishes within the grace
	add("stuck", time.Hour)            // cancelled after it
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	for range 2 {
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatal("jobs did not start")
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the grace")
	}
	if finished.Load() != 1 || cancelled.Load() != 1 {
		t.Errorf("finished %d cancelled %d, want 1 and 1", finished.Load(), cancelled.Load())
	}
	if hs, _ := l.List(context.Background()); len(hs) != 0 {
		t.Errorf("locks held after shutdown: %+v", hs)
	}
	h, _ := s.History(context.Background(), "stuck")
	if len(h) == 0 || h[0].Status != scheduler.StatusCancelled {
		t.Errorf("stuck job history %+v, want cancelled", h)
	}
}
