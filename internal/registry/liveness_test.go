package registry

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cronlock/cronlock/internal/kv"
	"github.com/cronlock/cronlock/internal/natstest"
)

// TestDeadReplicasStayDeadAfterRestart: two replicas died and left their
// announcements in the bucket, which the NATS server, restarted on the
// same store, still holds past their TTL (as a server restarted after a
// crash can: it kept the messages, not their expiry). They are neither
// listed nor in the live set (the load spreading's) of the replicas that
// run; those are, each with when it was last seen.
func TestDeadReplicasStayDeadAfterRestart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := natstest.RunRestartable(t, natstest.Options{})
	_, js := natstest.Connect(t, srv.URL())
	b, err := Open(ctx, js, testBucket, 1)
	if err != nil {
		t.Fatal(err)
	}
	dead := []string{"dead-1", "dead-2"}
	left := time.Now()
	for _, id := range dead {
		leaveAnnouncement(t, b, id)
	}
	live := []string{"live-a", "live-b"}
	var regs []*Registry
	for _, id := range live {
		regs = append(regs, runRegistry(t, srv.URL(), id, time.Now, &OffsetEstimate{}))
	}

	srv.Stop()
	srv.Start()
	restarted := time.Now()
	if d := TTL + 500*time.Millisecond - time.Since(left); d > 0 {
		time.Sleep(d) // the dead ones' announcements are now older than their TTL
	}
	for _, id := range dead {
		if e, err := b.Last(ctx, keyFor(id)); err != nil || e == nil || e.Free {
			t.Fatalf("the bucket no longer holds %s's announcement (%+v, %v): the test proves nothing", id, e, err)
		}
	}

	var listed []Replica
	waitUntil(t, 15*time.Second, "both live replicas listed, announced since the restart", func() bool {
		listed, err = List(ctx, js, testBucket)
		if err != nil {
			t.Logf("List: %v", err)
			return false
		}
		for _, r := range listed {
			if slices.Contains(dead, r.ID) {
				t.Fatalf("dead replica %s listed, last seen %v ago", r.ID, time.Since(r.Seen))
			}
		}
		return len(listed) == 2 && listed[0].Seen.After(restarted) && listed[1].Seen.After(restarted)
	})
	for i, r := range listed {
		if age := time.Since(r.Seen); r.ID != live[i] || age < 0 || age > TTL {
			t.Errorf("listed %s last seen %v ago, want %s seen within %v", r.ID, age, live[i], TTL)
		}
	}
	for i, r := range regs {
		waitUntil(t, 10*time.Second, live[i]+"'s live set to be the live replicas", func() bool {
			got := r.Live()
			for _, id := range dead {
				if slices.Contains(got, id) {
					t.Fatalf("%s counts dead replica %s live: live set %v", live[i], id, got)
				}
			}
			return slices.Equal(got, live)
		})
		for _, id := range dead {
			if _, ok, err := r.Lookup(ctx, id); err != nil || ok {
				t.Errorf("%s looks up dead replica %s: live %v, error %v; want not live", live[i], id, ok, err)
			}
		}
	}
}

// TestLivenessOnServerClock: a replica on its own clock (no offset
// estimate), ten minutes ahead, still measures the others' ages on the
// server's clock: they stay in its live set, and it in theirs.
func TestLivenessOnServerClock(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	ahead := func() time.Time { return time.Now().Add(10 * time.Minute) }
	on := runRegistry(t, url, "on-time", time.Now, &OffsetEstimate{})
	off := runRegistry(t, url, "ahead", ahead, nil)
	want := []string{"ahead", "on-time"}
	for _, r := range []*Registry{on, off} {
		waitUntil(t, 10*time.Second, r.ID()+"'s live set to hold both replicas", func() bool {
			return slices.Equal(r.Live(), want)
		})
	}
	if _, ok := off.offset.Get(); ok {
		t.Error("a registry without an offset estimate has one")
	}
}

// testBucket is the replicas bucket of these tests (the scheduler's
// default name).
const testBucket = "cronlock_replicas"

// leaveAnnouncement writes what replica id announces, without the TTL: an
// announcement that the bucket keeps whatever the server expires.
func leaveAnnouncement(t *testing.T, b *kv.Bucket, id string) {
	t.Helper()
	data, err := json.Marshal(Replica{ID: id, Host: "gone", PID: 1, Started: time.Now(), Running: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(context.Background(), kv.Write{Key: keyFor(id), Value: data,
		Header: nats.Header{idHeader: []string{id}}}); err != nil {
		t.Fatal(err)
	}
}

// runRegistry announces replica id every TTL/3, as a scheduler does,
// following the others, until the test ends; then it leaves.
func runRegistry(t *testing.T, url, id string, now func() time.Time, offset *OffsetEstimate) *Registry {
	t.Helper()
	_, js := natstest.Connect(t, url)
	b, err := Open(context.Background(), js, testBucket, 1)
	if err != nil {
		t.Fatal(err)
	}
	r := New(b, Replica{ID: id, Started: now().UTC()}, offset, now)
	ctx, cancel := context.WithCancel(context.Background())
	if err := r.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(TTL / 3)
		defer tick.Stop()
		for {
			actx, acancel := context.WithTimeout(ctx, TTL/3)
			r.Announce(actx, nil) // a failure (the server restarting) is retried at the next tick
			acancel()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done; r.Leave() })
	return r
}

// waitUntil polls cond every 50 ms until it holds, failing after d.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(d); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("not within %v: %s", d, what)
		}
	}
}

// TestJoinedSignals: a replica's registry signals Joined when it first
// hears another replica, and when that one leaves.
func TestJoinedSignals(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	a := runRegistry(t, url, "a", time.Now, nil)
	waitUntil(t, 5*time.Second, "a hears itself", func() bool { return slices.Equal(a.Live(), []string{"a"}) })
	select {
	case <-a.Joined(): // its own first announcement
	default:
	}
	b := runRegistry(t, url, "b", time.Now, nil)
	awaitJoined := func(what string) {
		t.Helper()
		select {
		case <-a.Joined():
		case <-time.After(5 * time.Second):
			t.Fatalf("no Joined signal within 5s after %s", what)
		}
	}
	awaitJoined("b announced")
	if got := a.Live(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("live after the signal: %v, want [a b]", got)
	}
	b.Leave()
	awaitJoined("b left")
	waitUntil(t, 5*time.Second, "b gone from a's live set", func() bool { return slices.Equal(a.Live(), []string{"a"}) })
}
