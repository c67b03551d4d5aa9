package main

import (
	"fmt"
	"runtime"
	"strings"
	"time"
)

// envCheckGoroutines, set to 1, makes `cronlock run` fail (exit 1, with the
// stacks) if any goroutine besides main's is left after a clean shutdown:
// the fault-injection harness uses it to prove shutdown leaks nothing.
//
// The check is written here on runtime.Stack rather than with goleak, so no
// test library is linked into the binary users run, and the harness checks
// that very binary (no build tag, no second build variant).
const envCheckGoroutines = "CRONLOCK_CHECK_GOROUTINES"

// Bounds of the wait for goroutines that are ending anyway, such as a
// connection's readers after Close: goleak's defaults, roughly.
const (
	goroutineWait = 5 * time.Second
	goroutinePoll = 50 * time.Millisecond
)

func checkGoroutines() error {
	if left := goroutinesLeft(goroutineWait); len(left) > 0 {
		return fmt.Errorf("goroutines left after shutdown:\n\n%s", strings.Join(left, "\n\n"))
	}
	return nil
}

// goroutinesLeft returns the stacks of the goroutines other than the
// caller's and the runtime's signal handling, once none is left or wait has
// passed.
func goroutinesLeft(wait time.Duration) []string {
	deadline := time.Now().Add(wait)
	for {
		left := otherGoroutines()
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(goroutinePoll)
	}
}

// otherGoroutines returns the stack of every goroutine but the caller's
// (the first in runtime.Stack's dump) and those os/signal keeps for the
// life of the process.
func otherGoroutines() []string {
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	stacks := strings.Split(strings.TrimSpace(string(buf)), "\n\n")
	var left []string
	for _, s := range stacks[1:] {
		if !isSignalGoroutine(s) {
			left = append(left, s)
		}
	}
	return left
}

// isSignalGoroutine reports whether stack is one of os/signal's: its
// receive loop (the top function's name changed between Go versions) and
// the runtime's signal-mask goroutine that signal.Notify starts.
func isSignalGoroutine(stack string) bool {
	lines := strings.SplitN(stack, "\n", 3)
	if len(lines) < 2 {
		return false
	}
	top := lines[1]
	return strings.HasPrefix(top, "os/signal.signal_recv(") || strings.HasPrefix(top, "os/signal.loop(") ||
		strings.Contains(stack, "runtime.ensureSigM")
}
