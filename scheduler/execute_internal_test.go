package scheduler

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/lock"
)

// A claimed run whose local safe deadline has passed does not start, even
// though the renewal's timer has not said so yet: its replica was frozen
// between the claim and the start, and another may have run later ticks
// meanwhile. Its hold is lost from then on.
func TestStartBlockedPastTheSafeDeadline(t *testing.T) {
	t.Parallel()
	held := func(deadline time.Time) *heldLock {
		ctx, end := context.WithCancelCause(context.Background())
		return &heldLock{s: &Scheduler{log: zerolog.Nop()}, name: "j", deadline: deadline,
			moved: make(chan struct{}), ctx: ctx, end: end, cancelled: ctx}
	}
	if err := startBlocked(context.Background(), held(time.Now().Add(time.Minute))); err != nil {
		t.Fatalf("startBlocked before the deadline = %v, want nil", err)
	}
	l := held(time.Now().Add(-time.Millisecond))
	if err := startBlocked(context.Background(), l); !errors.Is(err, lock.ErrLeaseLost) {
		t.Fatalf("startBlocked past the deadline = %v, want %v", err, lock.ErrLeaseLost)
	}
	if cause := context.Cause(l.Context()); !errors.Is(cause, lock.ErrLeaseLost) {
		t.Errorf("the hold's context after a start past its deadline: cause %v, want %v", cause, lock.ErrLeaseLost)
	}
	if got := runStatus(lock.ErrLeaseLost, lock.ErrLeaseLost, false); got != StatusLost {
		t.Errorf("such a run is recorded %s, want %s", got, StatusLost)
	}
}
