package scheduler_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/internal/registry"
	"github.com/cronlock/cronlock/internal/testlog"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/lock"
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
	older := announceOlder(ctx, t, js)
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

// A job's record that goes back in time (a stream that lost acknowledged
// writes; here an old copy written back) hands out a fencing token again:
// the replica that takes it says so.
func TestTokenGoingBackwardsIsReported(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	_, js := natstest.Connect(t, url)
	logs := &testlog.Buffer{}
	runs := newRecorder()
	r := newReplica(t, url, lockOpts("r"), scheduler.Options{Logger: zerolog.New(logs)})
	// Every 2 s: the record is written back between two ticks, while no
	// claim is in flight (a claim just before the write would carry its
	// token back in with its result).
	addJob(t, r, job.Job{Name: "j", Schedule: "*/2 * * * * *", Run: func(ctx context.Context) error {
		info, _ := job.FromContext(ctx)
		runs.add(rec{replica: "r", tick: info.Tick, start: time.Now()})
		return nil
	}})
	kv, err := js.KeyValue(ctx, scheduler.DefaultHistoryBucket)
	if err != nil {
		t.Fatal(err)
	}
	r.start(t)
	runs.next(t, 5*time.Second)
	old, err := kv.Get(ctx, "j")
	if err != nil {
		t.Fatal(err)
	}
	var last rec
	for range 2 {
		last = runs.next(t, 5*time.Second)
	}
	waitFor(t, 2*time.Second, "the last run's result", func() bool {
		h, err := r.s.History(ctx, "j")
		return err == nil && len(h) > 0 && h[0].Tick.Equal(last.tick) && h[0].Succeeded()
	})
	if strings.Contains(logs.String(), "went backwards") {
		t.Fatalf("reported before the record went back:\n%s", logs)
	}
	// Write the old record back (its tick is in the past: the next tick is claimed on top of it).
	if _, err := kv.Put(ctx, "j", old.Value()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(6 * time.Second)
	for !strings.Contains(logs.String(), "fencing token went backwards") {
		if time.Now().After(deadline) {
			t.Fatalf("no error about the token within 5s:\n%s", logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// An older replica that starts while a newer one runs a job does not see
// the job's hold; the newer replica then takes the job's key in the lock
// bucket, which the older one respects, until its run ends.
func TestGuardsRunsFromAnOlderReplica(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	_, js := natstest.Connect(t, url)
	started, finish := make(chan struct{}, 1), make(chan struct{})
	r := newReplica(t, url, lockOpts("newer"), scheduler.Options{Logger: testLogger(t, "newer")})
	addJob(t, r, job.Job{Name: "long", Schedule: "* * * * * *", Run: func(ctx context.Context) error {
		select {
		case started <- struct{}{}:
		default:
		}
		select {
		case <-finish:
		case <-ctx.Done():
		}
		return nil
	}})
	r.start(t)
	<-started
	older := announceOlder(ctx, t, js)
	defer older.Leave()
	oldLocks, err := lock.New(ctx, js, lockOpts("older"))
	if err != nil {
		t.Fatal(err)
	}
	defer oldLocks.Close()
	waitFor(t, 5*time.Second, "the newer replica holding the job's key in the lock bucket", func() bool {
		h, err := oldLocks.Holder(ctx, "long")
		return err == nil && h.Owner == "newer"
	})
	if _, err := oldLocks.Acquire(ctx, "long", lock.WithTimeout(200*time.Millisecond)); !errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("the older replica's acquire while the run goes on: %v, want ErrNotAcquired", err)
	}
	close(finish)
	lease, err := oldLocks.Acquire(ctx, "long", lock.WithTimeout(5*time.Second))
	if err != nil {
		t.Fatalf("the older replica's acquire once the run has ended: %v", err)
	}
	lease.Close()
}

// announceOlder announces a replica "older" as a release from before
// stored formats were announced does (no format).
func announceOlder(ctx context.Context, t *testing.T, js jetstream.JetStream) *registry.Registry {
	t.Helper()
	b, err := registry.Open(ctx, js, scheduler.DefaultReplicaBucket, 1)
	if err != nil {
		t.Fatal(err)
	}
	older := registry.New(b, registry.Replica{ID: "older", Started: time.Now().UTC()}, nil, time.Now)
	if err := older.Announce(ctx, nil); err != nil {
		t.Fatal(err)
	}
	return older
}
