package scheduler_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/internal/registry"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/scheduler"
)

// While a replica of an older release (one that announces no stored
// format) is live, a replica of this release starts no tick and refuses
// triggers with ErrOlderReplica; once that replica has left, it runs the
// job's ticks.
func TestDefersToAnOlderRelease(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	_, js := natstest.Connect(t, url)
	b, err := registry.Open(ctx, js, scheduler.DefaultReplicaBucket, 1)
	if err != nil {
		t.Fatal(err)
	}
	older := registry.New(b, registry.Replica{ID: "older", Started: time.Now().UTC()}, nil, time.Now)
	if err := older.Announce(ctx, nil); err != nil {
		t.Fatal(err)
	}
	runs := newRecorder()
	r := newReplica(t, url, lockOpts("newer"), scheduler.Options{Logger: testLogger(t, "newer")})
	addJob(t, r, job.Job{Name: "j", Schedule: "* * * * * *", Run: func(ctx context.Context) error {
		info, _ := job.FromContext(ctx)
		runs.add(rec{replica: "newer", tick: info.Tick, start: time.Now()})
		return nil
	}})
	r.start(t)
	// The older replica keeps announcing itself for 3 s: nothing runs.
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(time.Second) {
		if err := older.Announce(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := r.s.Trigger(ctx, "j"); !errors.Is(err, scheduler.ErrOlderReplica) {
			t.Fatalf("Trigger while an older replica is live: %v, want ErrOlderReplica", err)
		}
	}
	if got := runs.all(); len(got) != 0 {
		t.Fatalf("%d runs while an older replica was live, want none: %+v", len(got), got)
	}
	left := time.Now()
	older.Leave() // a clean stop removes the announcement
	first := runs.next(t, 5*time.Second)
	if d := first.start.Sub(left); d > 3*time.Second {
		t.Errorf("first run %v after the older replica left, want within a tick or two", d)
	}
}
