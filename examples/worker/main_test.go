package main

import (
	"context"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cronlock/cronlock/examples/internal/extest"
	"github.com/cronlock/cronlock/internal/natstest"
)

// The worker, on an embedded server with the report job every second, runs
// the job, shows its run info, serves the scheduler's metrics, and shuts
// down cleanly when its context ends.
func TestWorker(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	w := extest.Start(t, run, "-embedded", "-http", "127.0.0.1:0",
		"-report-schedule", "* * * * * *", "-shutdown-grace", "2s")

	out := w.WaitFor("generating report", 5*time.Second)
	if !regexp.MustCompile(`generating report .*token=[1-9]`).MatchString(out) {
		t.Errorf("the job did not log its fencing token:\n%s", out)
	}
	addr := regexp.MustCompile(`serving /metrics addr=(\S+)`).FindStringSubmatch(out)
	if addr == nil {
		t.Fatalf("no metrics address in the log:\n%s", out)
	}
	// The run is counted once it has finished (200 ms of simulated work);
	// the series exists at 0 from the start.
	want := regexp.MustCompile(`(?m)^cronlock_runs_total\{job="reports.generate",status="succeeded"\} [1-9]`)
	deadline := time.Now().Add(3 * time.Second)
	for metrics := ""; !want.MatchString(metrics); {
		if time.Now().After(deadline) {
			t.Fatalf("no %s in /metrics:\n%s", want, metrics)
		}
		time.Sleep(100 * time.Millisecond)
		metrics = extest.Get(t, "http://"+addr[1]+"/metrics")
	}

	if err := w.Stop(5 * time.Second); err != nil {
		t.Fatalf("run: %v", err)
	}
	if out := w.Out.String(); !strings.Contains(out, "stopped") {
		t.Errorf("no clean stop in the log:\n%s", out)
	}
}

// Two replicas on one server share the ticks: each tick runs on exactly one
// of them.
func TestTwoReplicas(t *testing.T) {
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	args := []string{"-nats", url, "-http", "127.0.0.1:0", "-report-schedule", "* * * * * *", "-shutdown-grace", "2s"}
	a := extest.Start(t, run, args...)
	b := extest.Start(t, run, args...)
	ran := regexp.MustCompile(`generating report .*tick=(\S+)`)
	ticks := func() map[string]int {
		count := map[string]int{}
		for _, w := range []*extest.Example{a, b} {
			for _, m := range ran.FindAllStringSubmatch(w.Out.String(), -1) {
				count[m[1]]++
			}
		}
		return count
	}
	// Ticks are a second apart; the bound is generous for a loaded machine.
	deadline := time.Now().Add(20 * time.Second)
	for len(ticks()) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d ticks ran in 20 s, want at least 2:\n%s\n%s", len(ticks()), a.Out.String(), b.Out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, w := range []*extest.Example{a, b} {
		if err := w.Stop(5 * time.Second); err != nil {
			t.Fatalf("run: %v", err)
		}
	}
	// Counted after both stopped, so a duplicate of a later tick shows too.
	for tick, n := range ticks() {
		if n != 1 {
			t.Errorf("tick %s ran %d times", tick, n)
		}
	}
}

func TestBadFlag(t *testing.T) {
	if err := run(context.Background(), []string{"-report-schedule", "61 * * * *", "-embedded", "-http", "127.0.0.1:0"}, io.Discard); err == nil {
		t.Fatal("a bad schedule was accepted")
	}
}
