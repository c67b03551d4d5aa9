package app_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/cronlock/cronlock/internal/testlog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/app"
	"github.com/cronlock/cronlock/internal/config"
	"github.com/cronlock/cronlock/lock"
)

// writeConfig writes a configuration file into dir and loads it.
func writeConfig(t *testing.T, dir, yaml string) *config.Config {
	t.Helper()
	path := filepath.Join(dir, "cronlock.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatalf("config:\n%s\n%v", yaml, err)
	}
	return cfg
}

// startDaemon starts a daemon and runs it until stop is called or the test
// ends.
func startDaemon(t *testing.T, cfg *config.Config, logs *testlog.Buffer) (d *app.Daemon, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	d, err := app.NewDaemon(ctx, cfg, logs)
	if err != nil {
		cancel()
		t.Fatalf("NewDaemon: %v\nlogs:\n%s", err, logs)
	}
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(30 * time.Second):
				var dump strings.Builder
				_ = pprof.Lookup("goroutine").WriteTo(&dump, 1)
				t.Errorf("Run did not return within 30s of cancel; goroutines:\n%s\nlogs:\n%s", dump.String(), logs)
			}
		})
	}
	t.Cleanup(stop)
	return d, stop
}

// waitFor polls cond every 20 ms until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lines returns the non-empty lines of the file, or nil if it does not exist.
func lines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// yamlQuote quotes s for a YAML double-quoted scalar.
func yamlQuote(s string) string { return fmt.Sprintf("%q", s) }

// newLogger is a debug-level JSON logger writing to w.
func newLogger(t *testing.T, w *testlog.Buffer) zerolog.Logger {
	t.Helper()
	l, err := app.NewLogger(config.Log{Level: "debug", Format: "json"}, w)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func errorsIsNotHeld(err error) bool { return errors.Is(err, lock.ErrNotHeld) }
