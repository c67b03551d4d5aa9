package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cronlock/cronlock/internal/history"
	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/job"
)

// TestStaleCacheNeverDecides: a replica's cached state that another
// writer has overtaken (an operator's suspend and resume, with no watch to
// tell the cache) must neither lose that write nor decide from the old
// state that there is nothing to do.
func TestStaleCacheNeverDecides(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	replica, js := openTestHistory(ctx, t, "cache-test")
	cache := history.NewCache()
	replica.store = history.NewStore(replica.store.Bucket(), replica.store.Size(), cache)
	operator, err := OpenHistory(ctx, js, HistoryOptions{Bucket: "cache-test"})
	if err != nil {
		t.Fatal(err)
	}
	const name = "backup"
	now := time.Now().UTC()

	// The replica suspends the job (cached: suspended); the operator
	// resumes it behind the cache's back.
	if err := replica.Suspend(ctx, name, "replica", now); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := cache.Get(name); !ok {
		t.Fatal("the replica's write was not cached: the test proves nothing")
	}
	if err := operator.Resume(ctx, name); err != nil {
		t.Fatal(err)
	}
	// The cache still says "suspended": Suspend must not take that as
	// "nothing to do".
	if err := replica.Suspend(ctx, name, "replica again", now); err != nil {
		t.Fatal(err)
	}
	st, err := operator.State(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if st.Suspended == nil || st.Suspended.By != "replica again" {
		t.Fatalf("suspended = %+v, want the replica's second suspend", st.Suspended)
	}

	// The operator resumes again; the replica claims a tick from its
	// stale cache: the claim must land on top of the resume, not undo it.
	if err := operator.Resume(ctx, name); err != nil {
		t.Fatal(err)
	}
	sched, err := job.ParseSchedule("* * * * * *", nil)
	if err != nil {
		t.Fatal(err)
	}
	var c claimed
	change := claimChange(claimRequest{sched: sched, run: Run{Job: name, Tick: now.Truncate(time.Second), Status: StatusRunning}, gapReason: ReasonNoReplica}, &c)
	_, rev, err := replica.update(ctx, name, nil, 0, func(st *history.Record) bool {
		return change(st, &history.Hold{Owner: "replica", Lease: "l1", Token: 1})
	})
	if err != nil || rev == 0 {
		t.Fatalf("claim: rev %v, err %v", rev, err)
	}
	st, err = operator.State(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if st.Suspended != nil || len(st.Runs) != 1 || st.Runs[0].Status != StatusRunning {
		t.Fatalf("after the claim: suspended %+v, runs %+v; want not suspended, the claimed run", st.Suspended, st.Runs)
	}
}

// A take's guess that the record does not exist (absentGuess) can be
// wrong by a write the watch has not yet delivered: the write from it must
// fail and the update start again from the record read, losing nothing.
func TestWrongAbsentGuessLosesNothing(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, _ := openTestHistory(ctx, t, "absent-test")
	const name = "backup"
	if err := h.Suspend(ctx, name, "operator", time.Now().UTC()); err != nil {
		t.Fatal(err)
	}
	changes := 0
	st, rev, err := h.update(ctx, name, &history.Record{}, 0, func(st *history.Record) bool {
		changes++
		st.LastToken = 7
		return true
	})
	if err != nil || rev == 0 {
		t.Fatalf("update from an absent guess: rev %d, %v", rev, err)
	}
	if changes != 2 || st.Suspended == nil || st.Suspended.By != "operator" {
		t.Errorf("after %d changes: suspended %+v; want the change applied again on the record read", changes, st.Suspended)
	}
}

// openTestHistory opens bucket's History on a server of the test's own.
func openTestHistory(ctx context.Context, t *testing.T, bucket string) (*History, jetstream.JetStream) {
	t.Helper()
	srv := natstest.RunServer(t, natstest.Options{})
	_, js := natstest.Connect(t, srv.ClientURL())
	h, err := OpenHistory(ctx, js, HistoryOptions{Bucket: bucket})
	if err != nil {
		t.Fatal(err)
	}
	return h, js
}
