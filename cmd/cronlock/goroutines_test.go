package main

import (
	"fmt"
	"github.com/cronlock/cronlock/internal/testlog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
)

// Not inlined, so each names its goroutine's top frame.
//
//go:noinline
func leakedForTest(block <-chan struct{}) { <-block }

//go:noinline
func endingForTest(end <-chan struct{}) { <-end }

// The check reports a goroutine that stays, waits for one that is ending,
// and leaves out the caller and os/signal's goroutines.
func TestGoroutinesLeft(t *testing.T) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1) // starts os/signal's goroutines for good
	defer signal.Stop(sig)
	block, end := make(chan struct{}), make(chan struct{})
	defer close(block)
	go leakedForTest(block)
	go endingForTest(end)
	// Seen before it ends, so the check below must wait for it.
	waitFor(t, 10*time.Second, "the goroutines started", func() bool {
		others := otherGoroutines()
		return anyContains(others, "endingForTest") && anyContains(others, "leakedForTest")
	})
	time.AfterFunc(100*time.Millisecond, func() { close(end) })

	left := goroutinesLeft(3 * time.Second) // the test binary's own goroutines stay: the full wait
	if !anyContains(left, "leakedForTest") {
		t.Errorf("the leaked goroutine is not reported:\n%s", strings.Join(left, "\n\n"))
	}
	for _, unwanted := range []string{"endingForTest", "cronlock.TestGoroutinesLeft(", "os/signal.", "runtime.ensureSigM"} {
		if anyContains(left, unwanted) {
			t.Errorf("%s reported:\n%s", unwanted, strings.Join(left, "\n\n"))
		}
	}
}

func anyContains(stacks []string, s string) bool {
	for _, st := range stacks {
		if strings.Contains(st, s) {
			return true
		}
	}
	return false
}

// `cronlock run` with CRONLOCK_CHECK_GOROUTINES=1 exits 0 after a clean
// shutdown that ran jobs: the check finds nothing left by the daemon.
func TestRunGoroutineCheckPasses(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	dir := t.TempDir()
	out := filepath.Join(dir, "runs")
	cfg := writeFile(t, dir, "cronlock.yaml", fmt.Sprintf(`
nats: {url: %s}
lock: {lease: 2s, renew: 500ms}
http: {listen: "127.0.0.1:0"}
jobs:
  - name: tick
    schedule: "* * * * * *"
    shell: echo ran >> %q
`, url, out))
	cmd := exec.Command(binary(t), "run", "-c", cfg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), envCheckGoroutines+"=1")
	logs := &testlog.Buffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		cmd.Process.Kill()
		if t.Failed() {
			t.Logf("cronlock run output:\n%s", logs)
		}
	}()
	waitFor(t, 30*time.Second, "two runs", func() bool { return len(fileLines(t, out)) >= 2 })

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no exit within 30s of SIGTERM")
	}
	if strings.Contains(logs.String(), "goroutines left") {
		t.Errorf("the check reported goroutines")
	}
}
