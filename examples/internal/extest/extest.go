// Package extest helps the examples' tests watch a running example's output.
package extest

import (
	"context"
	"github.com/cronlock/cronlock/internal/testlog"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Buffer is an io.Writer safe for concurrent use: the example writes its
// log from several goroutines while the test reads it.
type Buffer = testlog.Buffer

// Example is an example's run function running in the background.
type Example struct {
	Out    Buffer
	tb     testing.TB
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// Start calls run(ctx, args, &e.Out) in a goroutine. The test stops it with
// Stop; if it does not, a cleanup does.
func Start(tb testing.TB, run func(context.Context, []string, io.Writer) error, args ...string) *Example {
	ctx, cancel := context.WithCancel(context.Background())
	e := &Example{tb: tb, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(e.done)
		e.err = run(ctx, args, &e.Out)
	}()
	tb.Cleanup(func() { cancel(); <-e.done })
	return e
}

// WaitFor waits until the output contains substr and returns the output. It
// fails the test after timeout, or at once if the example returns first.
func (e *Example) WaitFor(substr string, timeout time.Duration) string {
	e.tb.Helper()
	deadline := time.After(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		out := e.Out.String()
		if strings.Contains(out, substr) {
			return out
		}
		select {
		case <-e.done:
			if out := e.Out.String(); strings.Contains(out, substr) {
				return out
			}
			e.tb.Fatalf("example returned %v before writing %q:\n%s", e.err, substr, e.Out.String())
		case <-deadline:
			e.tb.Fatalf("no %q in the output within %v:\n%s", substr, timeout, out)
		case <-tick.C:
		}
	}
}

// Stop cancels the example's context and returns its error, failing the
// test if it does not return within timeout.
func (e *Example) Stop(timeout time.Duration) error {
	e.tb.Helper()
	e.cancel()
	select {
	case <-e.done:
		return e.err
	case <-time.After(timeout):
		e.tb.Fatalf("example still running %v after its context was cancelled:\n%s", timeout, e.Out.String())
		return nil
	}
}

// Get returns the body of GET url, failing the test on any error.
func Get(tb testing.TB, url string) string {
	tb.Helper()
	resp, err := http.Get(url)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}
