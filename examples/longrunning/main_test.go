package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cronlock/cronlock/examples/internal/extest"
	"github.com/cronlock/cronlock/lock"
)

// The operation outlives its 1 s lease (6 batches of 300 ms) and finishes:
// the lease was renewed in the background.
func TestOutlivesLease(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var out extest.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	err := run(ctx, []string{"-embedded", "-lease", "1s", "-batches", "6", "-batch", "300ms"}, &out)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	log := out.String()
	if n := strings.Count(log, "store: committed"); n != 6 {
		t.Errorf("%d batches committed, want 6:\n%s", n, log)
	}
	if !strings.Contains(log, "operation finished") || strings.Contains(log, "lost") {
		t.Errorf("the lease did not last the whole operation:\n%s", log)
	}
}

// After a forced takeover, replica-a stops (its lease is lost or its write
// fenced off) and none of its writes lands after replica-b's.
func TestTakeover(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var out extest.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	err := run(ctx, []string{"-embedded", "-lease", "2s", "-batches", "20", "-batch", "300ms", "-takeover-after", "1500ms"}, &out)
	log := out.String()
	if !errors.Is(err, lock.ErrLeaseLost) && !errors.Is(err, errStaleToken) {
		t.Fatalf("run returned %v, want a lost lease or a stale token:\n%s", err, log)
	}
	_, after, ok := strings.Cut(log, "store: committed by=replica-b")
	if !ok {
		t.Fatalf("replica-b never wrote:\n%s", log)
	}
	if strings.Contains(after, "store: committed by=replica-a") {
		t.Errorf("replica-a wrote after replica-b took over:\n%s", log)
	}
}

// The lease must be a whole number of seconds: New's error is returned.
func TestBadLease(t *testing.T) {
	if err := run(context.Background(), []string{"-lease", "1500ms", "-embedded"}, &extest.Buffer{}); err == nil {
		t.Fatal("a lease of 1.5 s was accepted")
	}
}
