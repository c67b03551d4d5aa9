package scheduler

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cronlock/cronlock/internal/registry"
)

// Replica is a running scheduler as it announces itself in the replicas
// bucket: under a key with a TTL (ReplicaTTL), refreshed every
// ReplicaTTL/3. A replica that stops cleanly removes its announcement; one
// that dies is live no more once its last announcement is ReplicaTTL old
// by the server's clock, whether or not the server has expired it yet.
// Its fields: ID (the owner id its locks carry), Host, PID, Version,
// Started, Running (the jobs it runs now), ClockOffsetSeconds (its
// estimate of the NATS server's clock minus its own; nil before the first
// estimate) and Seen (when its last announcement was stored, by the
// server's clock: the replica was last heard from then).
type Replica = registry.Replica

// ReplicaTTL is how long an announcement lives without a refresh: 6 s.
const ReplicaTTL = registry.TTL

// ListReplicas returns the live replicas announced in bucket (default
// DefaultReplicaBucket), sorted by id: an announcement older than
// ReplicaTTL by the server's clock is left out even while the bucket still
// holds it.
func ListReplicas(ctx context.Context, js jetstream.JetStream, bucket string) ([]Replica, error) {
	if bucket == "" {
		bucket = DefaultReplicaBucket
	}
	rs, err := registry.List(ctx, js, bucket)
	if err != nil {
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	return rs, nil
}
