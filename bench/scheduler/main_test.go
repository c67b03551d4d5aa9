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
	if res.Missing > res.Expected/2 {
		t.Errorf("%d of %d checked ticks missing", res.Missing, res.Expected)
	}
	window := 0
	for _, r := range res.Replicas {
		window += r.WindowRuns
	}
	if window < res.Ran || res.Spread.Max > window || res.Spread.Min > res.Spread.Max {
		t.Errorf("runs per replica %+v (sum %d) do not add up to the %d job-ticks that ran", res.Spread, window, res.Ran)
	}
	if res.Trace == nil || res.Trace.ProductivePerTick == 0 {
		t.Errorf("the lock trace saw no hold that ran a job: %+v", res.Trace)
	}
	t.Logf("runs %d, checked %d, missing %d, duplicates %d, delay p50 %.1f ms max %.1f ms",
		res.RunsTotal, res.Expected, res.Missing, res.Duplicates, res.DelayP50, res.DelayMax)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
