package scheduler_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/scheduler"
)

// interruptible is a fleet of replicas running one job whose first
// longAttempts attempts at a tick take 3 s (long enough to be interrupted)
// and whose later attempts take 200 ms.
type interruptible struct {
	reps   map[string]*replica
	starts *recorder
}

const interruptJob = "interruptible"

func newInterruptible(t *testing.T, policy job.Interrupt, schedule string, longAttempts int, ids ...string) *interruptible {
	t.Helper()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	f := &interruptible{reps: map[string]*replica{}, starts: newRecorder()}
	for _, id := range ids {
		r := newReplica(t, url, lockOpts(id), scheduler.Options{ShutdownGrace: 300 * time.Millisecond, Logger: testLogger(t, id)})
		long := startRecorder(id, f.starts, 3*time.Second)
		short := startRecorder(id, f.starts, 200*time.Millisecond)
		addJob(t, r, job.Job{Name: interruptJob, Schedule: schedule, OnInterrupt: policy, Run: func(ctx context.Context) error {
			if info, _ := job.FromContext(ctx); info.Attempt > longAttempts {
				return short(ctx)
			}
			return long(ctx)
		}})
		f.reps[id] = r
		r.start(t)
	}
	return f
}

// interrupt stops the replica that started x, mid-run.
func (f *interruptible) interrupt(x rec) { f.reps[x.replica].stop() }

// someReplica is a replica still running, to read the history through.
func (f *interruptible) someReplica(t *testing.T) *replica {
	for _, r := range f.reps {
		if r.cancel != nil {
			return r
		}
	}
	t.Fatal("no replica left running")
	return nil
}

// entriesOf returns the statuses of the history entries of tick, oldest
// first, ignoring missed ones.
func entriesOf(h []scheduler.Run, tick time.Time) (statuses []scheduler.RunStatus, last scheduler.Run) {
	for _, r := range slices.Backward(h) {
		if r.Tick.Equal(tick) && r.Status != scheduler.StatusMissed {
			statuses = append(statuses, r.Status)
			last = r
		}
	}
	return statuses, last
}

// A run of an OnInterrupt rerun job stopped by its replica's shutdown is
// run again, the same tick with the next attempt number, by another
// replica; the history shows interrupted, then succeeded.
func TestInterruptedRunIsRerunElsewhere(t *testing.T) {
	t.Parallel()
	f := newInterruptible(t, job.InterruptRerun, "*/5 * * * * *", 1, "a", "b")
	first := f.starts.next(t, 10*time.Second)
	f.interrupt(first)
	again := f.starts.next(t, 5*time.Second)
	if again.replica == first.replica || !again.tick.Equal(first.tick) || again.attempt != 2 {
		t.Fatalf("after interrupting tick %v (attempt %d) on %s: run of tick %v attempt %d on %s; want the same tick, attempt 2, on the other replica",
			first.tick, first.attempt, first.replica, again.tick, again.attempt, again.replica)
	}
	var got []scheduler.RunStatus
	waitFor(t, 5*time.Second, "the rerun recorded", func() bool {
		got, _ = entriesOf(runsOf(t, f.someReplica(t), interruptJob), first.tick)
		return slices.Equal(got, []scheduler.RunStatus{scheduler.StatusInterrupted, scheduler.StatusSucceeded})
	})
}

// With the default policy an interrupted run is recorded cancelled and its
// tick is left: the next run is the next tick's.
func TestInterruptedRunIsNotRerunByDefault(t *testing.T) {
	t.Parallel()
	f := newInterruptible(t, job.InterruptSkip, "*/5 * * * * *", 1, "a", "b")
	first := f.starts.next(t, 10*time.Second)
	f.interrupt(first)
	next := f.starts.next(t, 10*time.Second)
	if !next.tick.After(first.tick) || next.attempt != 1 {
		t.Fatalf("after interrupting tick %v: run of tick %v attempt %d; want the next tick's first attempt", first.tick, next.tick, next.attempt)
	}
	got, _ := entriesOf(runsOf(t, f.someReplica(t), interruptJob), first.tick)
	if !slices.Equal(got, []scheduler.RunStatus{scheduler.StatusCancelled}) {
		t.Errorf("history of tick %v: %v, want [cancelled]", first.tick, got)
	}
}

// A tick interrupted job.MaxInterruptions times is recorded failed and not
// run again.
func TestInterruptionsAreBounded(t *testing.T) {
	t.Parallel()
	f := newInterruptible(t, job.InterruptRerun, "*/10 * * * * *", job.MaxInterruptions, "a", "b", "c", "d")
	first := f.starts.next(t, 15*time.Second)
	f.interrupt(first)
	for attempt := 2; attempt <= job.MaxInterruptions; attempt++ {
		x := f.starts.next(t, 5*time.Second)
		if !x.tick.Equal(first.tick) || x.attempt != attempt {
			t.Fatalf("run of tick %v attempt %d; want tick %v attempt %d", x.tick, x.attempt, first.tick, attempt)
		}
		f.interrupt(x)
	}
	next := f.starts.next(t, 15*time.Second)
	if !next.tick.After(first.tick) {
		t.Fatalf("tick %v run again (attempt %d) after %d interruptions", next.tick, next.attempt, job.MaxInterruptions)
	}
	got, last := entriesOf(runsOf(t, f.someReplica(t), interruptJob), first.tick)
	want := append(slices.Repeat([]scheduler.RunStatus{scheduler.StatusInterrupted}, job.MaxInterruptions-1), scheduler.StatusFailed)
	if !slices.Equal(got, want) {
		t.Errorf("history of tick %v: %v, want %v", first.tick, got, want)
	}
	if wantErr := fmt.Sprintf("interrupted %d times", job.MaxInterruptions); !strings.Contains(last.Error, wantErr) {
		t.Errorf("last entry's error %q, want it to say %q", last.Error, wantErr)
	}
}
