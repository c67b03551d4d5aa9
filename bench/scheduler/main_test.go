package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary be re-executed as a replica, as the command
// re-executes itself.
func TestMain(m *testing.M) {
	if os.Getenv(replicaEnv) != "" {
		replicaMain()
		return
	}
	os.Exit(m.Run())
}

// TestSmoke runs the real multi-process path briefly: 2 replica processes,
// 5 every-second jobs, 4 s. No tick may run twice, and the jobs must run.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes and a nats-server for ~6 s")
	}
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := config{
		Replicas: 2, Jobs: 5, Schedule: "* * * * * *",
		Duration: 4 * time.Second, Margin: time.Second, Trace: 5,
		exe: exe, stderr: testWriter{t},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := bench(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Replicas) != 2 {
		t.Fatalf("%d replica reports, want 2", len(res.Replicas))
	}
	if res.Duplicates != 0 {
		t.Errorf("%d duplicate runs: %v", res.Duplicates, res.DupExamples)
	}
	if res.Expected == 0 || res.Ran == 0 {
		t.Errorf("no checked tick ran (expected %d, ran %d)", res.Expected, res.Ran)
	}
	if res.Missing != 0 {
		t.Errorf("%d of %d checked ticks missing", res.Missing, res.Expected)
	}
	window := 0
	for _, r := range res.Replicas {
		window += r.WindowRuns
	}
	if window < res.Ran || res.Spread.Max > window || res.Spread.Min > res.Spread.Max {
		t.Errorf("runs per replica %+v (sum %d) do not add up to the %d job-ticks that ran", res.Spread, window, res.Ran)
	}
	// Per job-tick costs: a job's state record is its lock, so a tick is
	// two writes of the history (the claim that takes the lock, the result
	// that frees it) and none of the lock bucket; renewals, announcements
	// and the run's edges add a little.
	w := res.Server.WritesPerJobTick
	if w["locks"] != 0 || w["cronlock_history"] < 1.8 || res.Server.WritesTotal > 2.5 ||
		res.Server.WritesTotal < w["cronlock_history"] {
		t.Errorf("stored writes per job-tick %v (total %.2f): want no lock bucket write, ≥ 1.8 history, ≤ 2.5 in all",
			w, res.Server.WritesTotal)
	}
	if res.RecvPerReplica <= 0 || res.Server.ReplicasOutPerJobTick <= 0 ||
		res.Server.ReplicasOutPerJobTick > res.Server.OutPerJobTick {
		t.Errorf("msgs per job-tick: received per replica %.2f, server out %.2f (replicas' %.2f)",
			res.RecvPerReplica, res.Server.OutPerJobTick, res.Server.ReplicasOutPerJobTick)
	}
	if res.CPUPerJobTickUs <= 0 || res.GoroutinesPeakMax <= 0 || res.MaxRSSMiBMax <= 0 {
		t.Errorf("CPU per job-tick %.0f µs, goroutines %d, RSS %.0f MiB: want > 0", res.CPUPerJobTickUs, res.GoroutinesPeakMax, res.MaxRSSMiBMax)
	}
	// The trace follows the holds in the history records: every checked
	// tick's run is inside a hold of its replica's lease.
	if res.Trace == nil || res.Trace.ProductivePerTick < 0.5 || res.Trace.HoldsPerTick > 2 {
		t.Errorf("the lock trace saw too few holds that ran a job (want ≥ 0.5 per job-tick): %+v", res.Trace)
	}
	t.Logf("runs %d, checked %d, missing %d, duplicates %d, delay p50 %.1f ms max %.1f ms; writes per job-tick %v; trace %+v",
		res.RunsTotal, res.Expected, res.Missing, res.Duplicates, res.DelayP50, res.DelayMax, w, res.Trace)
}

// TestIdle runs the idle mode briefly: 2 replicas × 200 daily jobs, a 1 s
// settle and a 1 s window. Each replica and the server must be measured.
func TestIdle(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes and a nats-server for ~4 s")
	}
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := config{
		Replicas: 2, Jobs: 200, Idle: true, Settle: time.Second, Window: time.Second,
		Duration: 2*time.Second + idleTail, exe: exe, stderr: testWriter{t},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := bench(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	is := res.Idle
	if is == nil || len(is.Goroutines) != 2 || len(is.RSSMiB) != 2 || len(is.ReadyS) != 2 {
		t.Fatalf("idle summary %+v: want two replicas", is)
	}
	for i := range 2 {
		if is.Goroutines[i] <= 0 || is.RSSMiB[i] <= 0 || is.HeapMiB[i] <= 0 || is.ReadyS[i] <= 0 {
			t.Errorf("replica %d: goroutines %d, RSS %.0f MiB, heap %.0f MiB, ready %.2f s: want > 0",
				i, is.Goroutines[i], is.RSSMiB[i], is.HeapMiB[i], is.ReadyS[i])
		}
	}
	if is.ServerRSSMiB <= 0 || is.ServerGoroutines <= 0 || is.WindowS < 0.9 {
		t.Errorf("server RSS %.0f MiB, goroutines %d, window %.2f s", is.ServerRSSMiB, is.ServerGoroutines, is.WindowS)
	}
	if res.Duplicates != 0 || res.Expected != 0 {
		t.Errorf("duplicates %d, expected %d: daily jobs expect no checked tick", res.Duplicates, res.Expected)
	}
}

// TestDailySchedule: the idle mode's jobs are spread over the day's
// seconds and each parses as a daily schedule.
func TestDailySchedule(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		i, n int
		want string
	}{{0, 100000, "0 0 0 * * *"}, {50000, 100000, "0 0 12 * * *"}, {99999, 100000, "59 59 23 * * *"}, {1, 86400, "1 0 0 * * *"}} {
		if got := dailySchedule(tc.i, tc.n); got != tc.want {
			t.Errorf("dailySchedule(%d, %d) = %q, want %q", tc.i, tc.n, got, tc.want)
		}
	}
	if _, err := positiveList("1,3, 10"); err != nil {
		t.Error(err)
	}
	if _, err := positiveList("1,0"); err == nil {
		t.Error("positiveList(\"1,0\"): want an error")
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
