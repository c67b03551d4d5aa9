package chaos

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
	cronjob "github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/lock"
	"github.com/cronlock/cronlock/scheduler"
)

// LocksHeld finds a job's lock held in its state record (a real
// scheduler's run) and a key of the lock bucket, not a job whose record is
// free, and nothing once both are released.
func TestLocksHeld(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	_, js := natstest.Connect(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := lock.New(ctx, js, lock.Options{OwnerID: "r1", LeaseDuration: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s, err := scheduler.New(ctx, js, l, scheduler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	block := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	for _, j := range []cronjob.Job{
		{Name: "held.job", Schedule: "@yearly", Run: block},
		{Name: "free.job", Schedule: "@yearly", Run: func(context.Context) error { return nil }},
	} {
		if err := s.Add(j); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.TriggerRun(ctx, "free.job", nil); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	started, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		_, _ = s.TriggerRun(runCtx, "held.job", func(scheduler.Run) { close(started) })
	}()
	defer func() { stop(); <-done }()
	select {
	case <-started:
	case <-done:
		t.Fatal("the run of held.job ended before it started")
	}
	lease, err := l.Acquire(ctx, "user.lock")
	if err != nil {
		t.Fatal(err)
	}

	got := LocksHeld(url)
	if len(got) != 2 || !strings.HasPrefix(got[0], "held.job holder=") || !strings.Contains(got[0], `"owner":"r1"`) ||
		!strings.HasPrefix(got[1], "user.lock=") {
		t.Errorf("LocksHeld with held.job running and user.lock held = %q", got)
	}
	stop()
	<-done
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if got := LocksHeld(url); len(got) != 0 {
		t.Errorf("LocksHeld once both are released = %q, want none", got)
	}
}
