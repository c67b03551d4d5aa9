package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cronlock/cronlock/internal/proc"
	"github.com/cronlock/cronlock/internal/testrun"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// minParallel is how many parallel tests of this package run at once
// unless -parallel says otherwise (see testrun.MinParallel): they wait on
// daemons, ticks and leases far more than they compute.
const minParallel = 4

func TestMain(m *testing.M) {
	proc.Init() // trigger runs job commands in-process
	testrun.MinParallel(minParallel)
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

var (
	buildOnce sync.Once
	binDir    string
	binPath   string
	buildErr  error
)

// binary builds cronlock once per test run, with the race detector when the
// tests have it (so the build reuses the test's compiled packages), and
// returns its path.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "cronlock-bin-")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "cronlock")
		args := []string{"build", "-o", binPath}
		if raceEnabled {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, ".")...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			buildErr = &buildError{err: err, out: out.String()}
		}
	})
	if buildErr != nil {
		t.Fatalf("go build: %v", buildErr)
	}
	return binPath
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// result is one in-process invocation of the cli.
type result struct {
	code           int
	stdout, stderr string
}

// cronlock runs the cli in-process with args and the environment env
// (KEY=VALUE; nothing else is visible to it).
func cronlock(t *testing.T, env []string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	c := &cli{stdout: &stdout, stderr: &stderr, getenv: func(k string) string {
		for _, kv := range env {
			if key, v, ok := strings.Cut(kv, "="); ok && key == k {
				return v
			}
		}
		return ""
	}}
	code := c.main(context.Background(), args)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test -update rewrites it)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
