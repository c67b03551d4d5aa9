package scheduler_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/scheduler"
)

// resultLog collects what Options.OnResult delivers on every replica.
type resultLog struct {
	mu  sync.Mutex
	got []scheduler.Run
	by  map[uint64][]string // run ID → replicas that delivered it
}

func (l *resultLog) hook(replica string) func(scheduler.Run) {
	return func(r scheduler.Run) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.got = append(l.got, r)
		l.by[r.ID] = append(l.by[r.ID], replica)
	}
}

func (l *resultLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.got)
}

// Across three replicas, every entry recorded in the shared history is
// delivered to OnResult exactly once, with Previous the status of the
// entry before it, so a success after a failure says "failed".
func TestOnResultOncePerEntryWithPrevious(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	const name = "alternating"
	results := &resultLog{by: map[uint64][]string{}}
	var reps []*replica
	for _, id := range []string{"r1", "r2", "r3"} {
		r := newReplica(t, url, lockOpts(id), scheduler.Options{OnResult: results.hook(id), Logger: testLogger(t, id)})
		addJob(t, r, job.Job{Name: name, Schedule: "* * * * * *", Run: func(ctx context.Context) error {
			info, _ := job.FromContext(ctx)
			if info.Tick.Unix()%2 == 1 {
				return errors.New("odd tick")
			}
			return nil
		}})
		reps = append(reps, r)
		r.start(t)
	}
	waitFor(t, 20*time.Second, "8 results", func() bool { return results.len() >= 8 })
	for _, r := range reps {
		r.stop() // every result is delivered before Run returns
	}

	history := runsOf(t, reps[0], name)
	status := map[uint64]scheduler.RunStatus{}
	for _, r := range history {
		status[r.ID] = r.Status
		if _, ok := results.by[r.ID]; !ok && r.Finished() {
			t.Errorf("history entry %d (%s, tick %v) never delivered to OnResult", r.ID, r.Status, r.Tick)
		}
	}
	recovered := 0
	for _, r := range results.got {
		if by := results.by[r.ID]; len(by) != 1 {
			t.Errorf("entry %d (%s) delivered %d times, by %v", r.ID, r.Status, len(by), by)
		}
		if r.Status != status[r.ID] {
			t.Errorf("entry %d delivered as %s, recorded as %s", r.ID, r.Status, status[r.ID])
		}
		if prev, ok := status[r.ID-1]; ok && r.Previous != prev {
			t.Errorf("entry %d (%s): Previous %q, want %q (the status of entry %d)", r.ID, r.Status, r.Previous, prev, r.ID-1)
		}
		if r.Status == scheduler.StatusSucceeded && r.Previous == scheduler.StatusFailed {
			recovered++
		}
	}
	if recovered == 0 {
		t.Errorf("no success delivered with Previous %q among %d results", scheduler.StatusFailed, len(results.got))
	}
}
