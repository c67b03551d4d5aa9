package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cronlock/cronlock/internal/follow"
	"github.com/cronlock/cronlock/internal/kv"
)

// Replica is a running scheduler as it announces itself in the replicas
// bucket: under a key with a TTL (ReplicaTTL), refreshed every
// ReplicaTTL/3. A replica that stops cleanly removes its announcement; one
// that dies is live no more once its last announcement is ReplicaTTL old
// by the server's clock, whether or not the server has expired it yet
// (see replicaLive).
type Replica struct {
	ID      string    `json:"id"` // the owner id its locks carry
	Host    string    `json:"host,omitempty"`
	PID     int       `json:"pid,omitempty"`
	Version string    `json:"version,omitempty"`
	Started time.Time `json:"started"`
	// Running lists the jobs it runs now.
	Running []string `json:"running"`
	// ClockOffsetSeconds is its estimate of the NATS server's clock minus
	// its own; nil before the first estimate.
	ClockOffsetSeconds *float64 `json:"clock_offset_seconds,omitempty"`
	// Seen is when its last announcement was stored (server clock): the
	// replica was last heard from then.
	Seen time.Time `json:"seen"`
}

// ReplicaTTL is how long an announcement lives without a refresh.
const ReplicaTTL = 6 * time.Second

// replicaHeader carries the replica's id on its announcements, for the
// headers-only watch.
const replicaHeader = "Cronlock-Replica"

// openReplicas opens the replicas bucket, creating it when missing.
func openReplicas(ctx context.Context, js jetstream.JetStream, bucket string, replicas int) (*kv.Bucket, error) {
	b, err := kv.Open(ctx, js, kv.Config{
		Name:        bucket,
		Description: "cronlock: live replicas, one key each, expired by per-key TTL",
		Replicas:    replicas,
		MarkerTTL:   time.Minute,
	})
	if err != nil {
		return nil, fmt.Errorf("scheduler: replicas: %w", err)
	}
	return b, nil
}

// ListReplicas returns the live replicas announced in bucket (default
// DefaultReplicaBucket), sorted by id: an announcement older than
// ReplicaTTL by the server's clock is left out even while the bucket still
// holds it (replicaLive).
func ListReplicas(ctx context.Context, js jetstream.JetStream, bucket string) ([]Replica, error) {
	if bucket == "" {
		bucket = DefaultReplicaBucket
	}
	b, err := openReplicas(ctx, js, bucket, 1)
	if err != nil {
		return nil, err
	}
	var clock serverClock
	stamp, at, err := b.ServerTime(ctx)
	if err != nil {
		return nil, fmt.Errorf("scheduler: replicas: read the server's clock: %w", err)
	}
	clock.set(stamp, at)
	keys, err := b.Keys(ctx)
	if err != nil {
		return nil, fmt.Errorf("scheduler: replicas: %w", err)
	}
	var out []Replica
	for _, k := range keys {
		e, err := b.Last(ctx, k)
		if err != nil {
			return nil, fmt.Errorf("scheduler: replicas: %w", err)
		}
		var r Replica
		if e == nil || e.Free || !replicaLive(e.Stored, clock.now()) || json.Unmarshal(e.Value, &r) != nil {
			continue
		}
		r.Seen = e.Stored
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Replica) int { return cmpString(a.ID, b.ID) })
	return out, nil
}

// replicaKey is a valid KV key for a replica id (which may hold ':'),
// unique by a hash of the id.
func replicaKey(id string) string {
	clean := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '_'
	}, id)
	h := fnv.New32a()
	h.Write([]byte(id))
	return fmt.Sprintf("%.64s-%08x", clean, h.Sum32())
}

// registry announces this replica and follows the others; the
// announcements also sample the server's clock (offsetEstimate, and clock
// for the replicas' liveness).
type registry struct {
	bucket *kv.Bucket
	self   Replica
	key    string
	offset *offsetEstimate
	now    func() time.Time // the replica's own clock
	clock  serverClock      // from this replica's own announcements

	// othersMu guards others alone: the scheduling path reads it at every
	// tick (live), so it is never held across a NATS call.
	othersMu sync.Mutex
	others   map[string]announced // key → last announcement, self included

	// mu guards pending; announce holds it across its write, so the
	// watch's sample of that write waits until the revision is known.
	mu      sync.Mutex
	pending struct {
		rev    uint64
		t0, t1 time.Time
	}
	sampled chan struct{} // closed at the first clock sample
	f       *follow.Follower
}

func newRegistry(b *kv.Bucket, self Replica, offset *offsetEstimate, now func() time.Time) *registry {
	return &registry{bucket: b, self: self, key: replicaKey(self.ID), offset: offset, now: now,
		others: map[string]announced{}, sampled: make(chan struct{})}
}

// announced is a replica's last announcement as the watch heard it.
type announced struct {
	id   string
	seen time.Time // stored, server clock
}

func (r *registry) id() string { return r.self.ID }

// live returns the ids of the live replicas (replicaLive), self included
// while its own announcements are fresh. Announcements too old to be live
// are forgotten: a later one brings the replica back.
func (r *registry) live() []string {
	now := r.clock.now()
	r.othersMu.Lock()
	defer r.othersMu.Unlock()
	out := make([]string, 0, len(r.others))
	for key, a := range r.others {
		if !replicaLive(a.seen, now) {
			delete(r.others, key)
			continue
		}
		out = append(out, a.id)
	}
	slices.Sort(out)
	return out
}

// watch follows the announcements.
func (r *registry) watch(ctx context.Context) error {
	f, err := r.bucket.Follow(ctx, r.heard)
	if err != nil {
		return err
	}
	r.f = f
	return nil
}

func (r *registry) heard(key string, rev uint64, stored time.Time, h nats.Header) {
	r.othersMu.Lock()
	free := kv.IsFree(h)
	if free {
		delete(r.others, key)
	} else if id := h.Get(replicaHeader); id != "" {
		r.others[key] = announced{id: id, seen: stored}
	}
	r.othersMu.Unlock()
	if free {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if key == r.key && rev == r.pending.rev && !r.pending.t0.IsZero() {
		// This replica's own write, stamped just now: a fresh reading of
		// the server's clock (an older message redelivered is not).
		r.clock.set(stored, time.Now())
		if r.offset != nil {
			mid := r.pending.t0.Add(r.pending.t1.Sub(r.pending.t0) / 2)
			r.offset.add(stored.Sub(mid), r.pending.t1.Sub(r.pending.t0))
		}
		r.pending.t0 = time.Time{}
		select {
		case <-r.sampled:
		default:
			close(r.sampled)
		}
	}
}

// announce writes this replica's announcement with the jobs it runs now.
func (r *registry) announce(ctx context.Context, running []string) error {
	self := r.self
	self.Running = running
	if self.Running == nil {
		self.Running = []string{}
	}
	if d, ok := r.offset.get(); ok {
		sec := d.Seconds()
		self.ClockOffsetSeconds = &sec
	}
	data, err := json.Marshal(self)
	if err != nil {
		return err
	}
	t0 := r.now()
	r.mu.Lock() // hold off the watch's sample until the revision is known
	defer r.mu.Unlock()
	rev, err := r.bucket.Put(ctx, kv.Write{Key: r.key, Value: data, TTL: ReplicaTTL, Expected: r.pending.rev,
		Header: nats.Header{replicaHeader: []string{r.self.ID}}})
	if kv.IsConflict(err) { // an earlier process with this id, or a lost reply: write over it
		var e *kv.Entry
		if e, err = r.bucket.Last(ctx, r.key); err == nil {
			var last uint64
			if e != nil {
				last = e.Revision
			}
			rev, err = r.bucket.Put(ctx, kv.Write{Key: r.key, Value: data, TTL: ReplicaTTL, Expected: last,
				Header: nats.Header{replicaHeader: []string{r.self.ID}}})
		}
	}
	if err != nil {
		return err
	}
	r.pending.rev, r.pending.t0, r.pending.t1 = rev, t0, r.now()
	return nil
}

// leave removes the announcement and stops the watch.
func (r *registry) leave() {
	if r.f != nil {
		r.f.Stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), leaveTimeout)
	defer cancel()
	r.bucket.Purge(ctx, r.key, 0, time.Minute)
}
