package kv

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cronlock/cronlock/internal/follow"
)

// FollowPaced is Follow at a pace (follow.Pace): what was written is
// delivered every pace.Interval, or as it is written while the returned
// follow is hurried.
func (b *Bucket) FollowPaced(ctx context.Context, pace follow.Pace, fn Handler) (*follow.Paced, error) {
	return follow.StartPaced(ctx, b.stream, b.nc, b.prefix+">", pace, func(subject string, seq uint64, stored time.Time, h nats.Header) {
		fn(b.Key(subject), seq, stored, h)
	})
}
