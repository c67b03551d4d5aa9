package scheduler

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go"

	"github.com/cronlock/cronlock/internal/kv"
	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/lock"
)

// TestDeadReplicasStayDeadAfterRestart: two replicas died and left their
// announcements in the bucket, which the NATS server, restarted on the
// same store, still holds past their TTL (as a server restarted after a
// crash can: it kept the messages, not their expiry). They are neither
// listed nor in the load spreading's live set of the replicas that run;
// those are, each with when it was last seen.
func TestDeadReplicasStayDeadAfterRestart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := natstest.RunRestartable(t, natstest.Options{})
	_, js := natstest.Connect(t, srv.URL())
	b, err := openReplicas(ctx, js, DefaultReplicaBucket, 1)
	if err != nil {
		t.Fatal(err)
	}
	dead := []string{"dead-1", "dead-2"}
	left := time.Now()
	for _, id := range dead {
		leaveAnnouncement(t, b, id)
	}
	live := []string{"live-a", "live-b"}
	var scheds []*Scheduler
	for _, id := range live {
		scheds = append(scheds, runReplica(t, srv.URL(), id))
	}

	srv.Stop()
	srv.Start()
	restarted := time.Now()
	if d := ReplicaTTL + 500*time.Millisecond - time.Since(left); d > 0 {
		time.Sleep(d) // the dead ones' announcements are now older than their TTL
	}
	for _, id := range dead {
		if e, err := b.Last(ctx, replicaKey(id)); err != nil || e == nil || e.Free {
			t.Fatalf("the bucket no longer holds %s's announcement (%+v, %v): the test proves nothing", id, e, err)
		}
	}

	var listed []Replica
	waitUntil(t, 15*time.Second, "both live replicas listed, announced since the restart", func() bool {
		listed, err = ListReplicas(ctx, js, "")
		if err != nil {
			t.Logf("ListReplicas: %v", err)
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
		if age := time.Since(r.Seen); r.ID != live[i] || age < 0 || age > ReplicaTTL {
			t.Errorf("listed %s last seen %v ago, want %s seen within %v", r.ID, age, live[i], ReplicaTTL)
		}
	}
	for i, s := range scheds {
		waitUntil(t, 10*time.Second, live[i]+"'s spreading set to be the live replicas", func() bool {
			got := s.registry.live()
			for _, id := range dead {
				if slices.Contains(got, id) {
					t.Fatalf("%s spreads load over dead replica %s: live set %v", live[i], id, got)
				}
			}
			return slices.Equal(got, live)
		})
	}
}

// leaveAnnouncement writes what replica id announces, without the TTL: an
// announcement that the bucket keeps whatever the server expires.
func leaveAnnouncement(t *testing.T, b *kv.Bucket, id string) {
	t.Helper()
	data, err := json.Marshal(Replica{ID: id, Host: "gone", PID: 1, Started: time.Now(), Running: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(context.Background(), kv.Write{Key: replicaKey(id), Value: data,
		Header: nats.Header{replicaHeader: []string{id}}}); err != nil {
		t.Fatal(err)
	}
}

// runReplica runs a scheduler called id, without jobs, until the test ends.
func runReplica(t *testing.T, url, id string, opts ...func(*Options)) *Scheduler {
	t.Helper()
	_, js := natstest.Connect(t, url)
	l, err := lock.New(context.Background(), js, lock.Options{OwnerID: id, LeaseDuration: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	o := Options{ShutdownGrace: time.Second}
	for _, f := range opts {
		f(&o)
	}
	s, err := New(context.Background(), js, l, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return s
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

// TestLivenessOnServerClock: a replica that schedules on its own clock
// (LocalClock), ten minutes ahead, still measures the others' ages on the
// server's clock: they stay in its spreading set, and it in theirs.
func TestLivenessOnServerClock(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t, natstest.Options{})
	ahead := clockwork.NewFakeClockAt(time.Now().Add(10 * time.Minute))
	on := runReplica(t, srv.ClientURL(), "on-time")
	off := runReplica(t, srv.ClientURL(), "ahead", func(o *Options) { o.Clock, o.LocalClock = ahead, true })
	want := []string{"ahead", "on-time"}
	for _, s := range []*Scheduler{on, off} {
		waitUntil(t, 10*time.Second, s.registry.id()+"'s spreading set to hold both replicas", func() bool {
			return slices.Equal(s.registry.live(), want)
		})
	}
}
