package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cronlock/cronlock/internal/kv"
)

// Replica is a running scheduler as it announces itself in the replicas
// bucket: under a key with a TTL (TTL), refreshed every TTL/3. A replica
// that stops cleanly removes its announcement; one that dies is live no
// more once its last announcement is TTL old by the server's clock,
// whether or not the server has expired it yet (see Live).
type Replica struct {
	ID      string `json:"id"` // the owner id its locks carry
	Host    string `json:"host,omitempty"`
	PID     int    `json:"pid,omitempty"`
	Version string `json:"version,omitempty"`
	// Format is the stored format of the jobs' records that the replica
	// reads and writes (see the scheduler's StoredFormat); 0 for releases
	// from before replicas announced one.
	Format  int       `json:"format,omitempty"`
	Started time.Time `json:"started"`
	// Labels are the replica's labels (its configuration's
	// replica.labels), which a job's on_replicas matches; nil for none,
	// and for releases from before labels.
	Labels map[string]string `json:"labels,omitempty"`
	// Running lists the jobs it runs now.
	Running []string `json:"running"`
	// ClockOffsetSeconds is its estimate of the NATS server's clock minus
	// its own; nil before the first estimate.
	ClockOffsetSeconds *float64 `json:"clock_offset_seconds,omitempty"`
	// Seen is when its last announcement was stored (server clock): the
	// replica was last heard from then.
	Seen time.Time `json:"seen"`
}

// TTL is how long an announcement lives without a refresh.
const TTL = 6 * time.Second

// idHeader carries the replica's id on its announcements, for the
// headers-only watch.
const idHeader = "Cronlock-Replica"

// formatHeader carries the replica's Format on its announcements, for the
// headers-only watch; absent for format 0.
const formatHeader = "Cronlock-Format"

// labelsHeader carries the replica's Labels on its announcements, for
// the headers-only watch: "key=value" pairs joined by ',', sorted; absent
// for none. Label keys and values hold neither ',' nor '='
// (job.ValidateLabel).
const labelsHeader = "Cronlock-Labels"

// markerTTL is how long the marker of a removed or expired announcement
// lives.
const markerTTL = time.Minute

// Open opens the replicas bucket, creating it when missing.
func Open(ctx context.Context, js jetstream.JetStream, bucket string, replicas int) (*kv.Bucket, error) {
	b, err := kv.Open(ctx, js, kv.Config{
		Name:        bucket,
		Description: "cronlock: live replicas, one key each, expired by per-key TTL",
		Replicas:    replicas,
		MarkerTTL:   markerTTL,
	})
	if err != nil {
		return nil, fmt.Errorf("replicas: %w", err)
	}
	return b, nil
}

// List returns the live replicas announced in bucket, sorted by id: an
// announcement older than TTL by the server's clock is left out even while
// the bucket still holds it (Live).
func List(ctx context.Context, js jetstream.JetStream, bucket string) ([]Replica, error) {
	b, err := Open(ctx, js, bucket, 1)
	if err != nil {
		return nil, err
	}
	var clock ServerClock
	stamp, at, err := b.ServerTime(ctx)
	if err != nil {
		return nil, fmt.Errorf("replicas: read the server's clock: %w", err)
	}
	clock.Set(stamp, at)
	keys, err := b.Keys(ctx)
	if err != nil {
		return nil, fmt.Errorf("replicas: %w", err)
	}
	var out []Replica
	for _, k := range keys {
		e, err := b.Last(ctx, k)
		if err != nil {
			return nil, fmt.Errorf("replicas: %w", err)
		}
		if r, ok := decode(e, clock.Now()); ok {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b Replica) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// decode returns the announcement e holds, with its Seen, and whether it
// is of a live replica at serverNow: false for no message, a removed
// announcement, one too old (Live), or one that does not parse.
func decode(e *kv.Entry, serverNow time.Time) (Replica, bool) {
	var r Replica
	if e == nil || e.Free || !Live(e.Stored, serverNow) || json.Unmarshal(e.Value, &r) != nil {
		return Replica{}, false
	}
	r.Seen = e.Stored
	return r, true
}

// Key is the KV key of replica id's announcement: one token of
// [A-Za-z0-9_-], unique by a hash of the id, which other records keyed by
// replica (the scheduler's every_replica records) reuse.
func Key(id string) string { return keyFor(id) }

// keyFor is a valid KV key for a replica id (which may hold ':'), unique
// by a hash of the id.
func keyFor(id string) string {
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
