package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/scheduler"
)

// series returns the samples of the metric name in reg, keyed by their
// labels as `k="v",...` in name order.
func series(t *testing.T, reg *prometheus.Registry, name string) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, lp := range m.GetLabel() {
				ls = append(ls, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
			}
			sort.Strings(ls)
			out[strings.Join(ls, ",")] = m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return out
}

// TestJobMetrics: every job's counters exist at 0 from Add (runs by each
// result, missed ticks by each reason, lost leases), and the per-job
// gauges follow the scheduler: the next tick (also while a run is busy
// with the current one), the schedule's interval, the schedule and zone,
// and a suspension made through the shared history (as the CLI does). A
// removed job's gauges go, its counters stay; an added one gets its zeros.
func TestJobMetrics(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	reg := prometheus.NewRegistry()
	r := newReplica(t, url, lockOpts("m1"), scheduler.Options{Registerer: reg, Logger: testLogger(t, "m1")})
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	noop := func(context.Context) error { return nil }
	addJob(t, r, job.Job{Name: "hourly", Schedule: "0 * * * *", Location: tokyo, Run: noop})
	addJob(t, r, job.Job{Name: "weekday", Schedule: "0 9 * * 1-5", Run: noop})
	addJob(t, r, job.Job{Name: "off", Schedule: "0 * * * *", Suspended: true, Run: noop})
	started := make(chan struct{}, 100)
	addJob(t, r, job.Job{Name: "busy", Schedule: "* * * * * *", Run: func(ctx context.Context) error {
		started <- struct{}{}
		select {
		case <-ctx.Done():
		case <-time.After(1500 * time.Millisecond):
		}
		return nil
	}})

	zeros := func(name string) {
		t.Helper()
		runs := series(t, reg, "cronlock_runs_total")
		for _, st := range []string{"succeeded", "failed", "timeout", "lost", "cancelled", "interrupted"} {
			if v, ok := runs[fmt.Sprintf(`job=%q,status=%q`, name, st)]; !ok || v != 0 {
				t.Errorf("cronlock_runs_total{job=%q,status=%q} = %v, present %v; want 0", name, st, v, ok)
			}
		}
		missed := series(t, reg, "cronlock_ticks_missed_total")
		if !slices.Contains(scheduler.MissedReasons, scheduler.ReasonLockHeld) {
			t.Errorf("MissedReasons %v lacks lock_held", scheduler.MissedReasons)
		}
		for _, reason := range scheduler.MissedReasons {
			if v, ok := missed[fmt.Sprintf(`job=%q,reason=%q`, name, reason)]; !ok || v != 0 {
				t.Errorf("cronlock_ticks_missed_total{job=%q,reason=%q} = %v, present %v; want 0", name, reason, v, ok)
			}
		}
		if v, ok := series(t, reg, "cronlock_leases_lost_total")[fmt.Sprintf(`job=%q`, name)]; !ok || v != 0 {
			t.Errorf("cronlock_leases_lost_total{job=%q} = %v, present %v; want 0", name, v, ok)
		}
	}
	for _, name := range []string{"hourly", "weekday", "off", "busy"} {
		zeros(name)
	}
	gauge := func(metric, name string) (float64, bool) {
		v, ok := series(t, reg, metric)[fmt.Sprintf(`job=%q`, name)]
		return v, ok
	}
	if v, _ := gauge("cronlock_job_interval_seconds", "hourly"); v != 3600 {
		t.Errorf("interval of hourly = %v, want 3600", v)
	}
	if v, _ := gauge("cronlock_job_interval_seconds", "weekday"); v != 3*24*3600 {
		t.Errorf("interval of weekday = %v, want the weekend's 259200", v)
	}
	wantNext := func(name, spec string, loc *time.Location) {
		t.Helper()
		s, err := job.ParseSchedule(spec, loc)
		if err != nil {
			t.Fatal(err)
		}
		want := float64(s.Next(time.Now()).Unix())
		if v, ok := gauge("cronlock_job_next_run_timestamp_seconds", name); !ok || math.Abs(v-want) > 1 {
			t.Errorf("next run of %s = %v (present %v), want %v", name, v, ok, want)
		}
	}
	wantNext("hourly", "0 * * * *", tokyo)
	wantNext("weekday", "0 9 * * 1-5", nil)
	info := series(t, reg, "cronlock_job_info")
	for _, k := range []string{`job="hourly",schedule="0 * * * *",timezone="Asia/Tokyo"`, `job="weekday",schedule="0 9 * * 1-5",timezone="UTC"`} {
		if info[k] != 1 {
			t.Errorf("cronlock_job_info{%s} missing; have %v", k, info)
		}
	}

	r.start(t)
	<-started // busy runs: its next tick is still ahead
	for range 3 {
		v, _ := gauge("cronlock_job_next_run_timestamp_seconds", "busy")
		if now := float64(time.Now().UnixMilli()) / 1e3; v <= now-0.1 {
			t.Errorf("next run of busy = %v while it runs, at %v: in the past", v, now)
		}
		time.Sleep(300 * time.Millisecond)
	}
	waitFor(t, 5*time.Second, "cronlock_live_replicas = 1", func() bool {
		return series(t, reg, "cronlock_live_replicas")[""] == 1
	})

	// Suspension follows the shared history, whoever writes it.
	suspended := func(name string) float64 { v, _ := gauge("cronlock_job_suspended", name); return v }
	if suspended("off") != 1 || suspended("hourly") != 0 {
		t.Errorf("suspended gauges: off %v (want 1), hourly %v (want 0)", suspended("off"), suspended("hourly"))
	}
	_, js := natstest.Connect(t, url)
	ctx := context.Background()
	h, err := scheduler.OpenHistory(ctx, js, scheduler.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Suspend(ctx, "hourly", "cli", time.Now()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "cronlock_job_suspended{job=hourly} = 1", func() bool { return suspended("hourly") == 1 })
	if err := h.Resume(ctx, "hourly"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "cronlock_job_suspended{job=hourly} = 0", func() bool { return suspended("hourly") == 0 })

	// What a reload does: change weekday's schedule, remove hourly, add new.
	if err := r.s.Remove("weekday"); err != nil {
		t.Fatal(err)
	}
	addJob(t, r, job.Job{Name: "weekday", Schedule: "30 9 * * 1-5", Run: noop})
	if err := r.s.Remove("hourly"); err != nil {
		t.Fatal(err)
	}
	addJob(t, r, job.Job{Name: "new", Schedule: "0 0 * * *", Run: noop})
	zeros("new")
	zeros("hourly") // counters outlive the job
	info = series(t, reg, "cronlock_job_info")
	if info[`job="weekday",schedule="30 9 * * 1-5",timezone="UTC"`] != 1 || len(info) != 4 {
		t.Errorf("cronlock_job_info after the change: %v; want weekday's new schedule only, and no hourly", info)
	}
	for _, m := range []string{"cronlock_job_next_run_timestamp_seconds", "cronlock_job_suspended", "cronlock_job_interval_seconds"} {
		if v, ok := gauge(m, "hourly"); ok {
			t.Errorf("%s{job=hourly} = %v after its removal", m, v)
		}
	}
	wantNext("new", "0 0 * * *", nil)
}

// TestLastRunGaugesOnEveryReplica: cronlock_last_success_timestamp_seconds
// and cronlock_last_failure_timestamp_seconds follow the job's shared
// history on every replica, whichever ran it, and move with each new
// result: set at a job's first success, the failure gauge absent until it
// fails, then both moving again as results change.
func TestLastRunGaugesOnEveryReplica(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	var failing atomic.Bool
	regs := []*prometheus.Registry{prometheus.NewRegistry(), prometheus.NewRegistry()}
	for i, reg := range regs {
		name := fmt.Sprintf("g%d", i+1)
		r := newReplica(t, url, lockOpts(name), scheduler.Options{Registerer: reg, Logger: testLogger(t, name)})
		addJob(t, r, job.Job{Name: "flip", Schedule: "* * * * * *", Run: func(context.Context) error {
			if failing.Load() {
				return errors.New("failing on purpose")
			}
			return nil
		}})
		r.start(t)
	}
	gauge := func(reg *prometheus.Registry, metric string) (float64, bool) {
		v, ok := series(t, reg, metric)[`job="flip"`]
		return v, ok
	}
	const (
		success = "cronlock_last_success_timestamp_seconds"
		failure = "cronlock_last_failure_timestamp_seconds"
	)
	// after waits until every replica's gauge metric is at least since.
	after := func(metric string, since time.Time) float64 {
		t.Helper()
		var v float64
		waitFor(t, 10*time.Second, metric+" on every replica", func() bool {
			for _, reg := range regs {
				got, ok := gauge(reg, metric)
				if !ok || got < float64(since.Unix()) {
					return false
				}
				v = got
			}
			return true
		})
		return v
	}
	began := time.Now()
	firstSuccess := after(success, began)
	for i, reg := range regs {
		if v, ok := gauge(reg, failure); ok {
			t.Errorf("replica g%d: %s = %v before any failure, want absent", i+1, failure, v)
		}
	}
	failing.Store(true)
	failedAt := time.Now().Add(time.Second) // a run started before the switch may still succeed
	after(failure, failedAt)
	failing.Store(false)
	if last := after(success, time.Now().Add(time.Second)); last <= firstSuccess {
		t.Errorf("%s = %v after the job succeeded again, want past its first %v", success, last, firstSuccess)
	}
}
