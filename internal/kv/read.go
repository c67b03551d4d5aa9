package kv

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cronlock/cronlock/internal/follow"
	"github.com/cronlock/cronlock/internal/jsapi"
)

// opTimeout bounds a read when the caller's context has no deadline.
const opTimeout = 5 * time.Second

// Entry is the last message stored for a key.
type Entry struct {
	Revision uint64
	Value    []byte
	Header   nats.Header
	// Free: the message is a delete or purge marker, or a TTL expiry
	// marker (IsFree).
	Free bool
	// Stored is the server's time of the write; TTL the message's own time
	// to live, 0 if none.
	Stored time.Time
	TTL    time.Duration
}

// Last reads key's last message with a direct get where the bucket allows
// it (any replica answers, without queueing behind the JetStream API). nil
// with a nil error means the key has no message. A follower may answer
// with a slightly stale entry: a read is a hint; compare-and-swap decides.
func (b *Bucket) Last(ctx context.Context, key string) (*Entry, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opTimeout)
		defer cancel()
	}
	m, err := b.stream.GetLastMsgForSubject(ctx, b.Subject(key))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	e := &Entry{Revision: m.Sequence, Value: m.Data, Header: m.Header, Free: IsFree(m.Header), Stored: m.Time}
	if ttl := m.Header.Get(jetstream.MsgTTLHeader); ttl != "" {
		e.TTL, _ = time.ParseDuration(ttl)
	}
	return e, nil
}

// Handler receives the key, revision, server time and headers of each
// write that a follow delivers, in stream order.
type Handler func(key string, rev uint64, stored time.Time, h nats.Header)

// Follow delivers the last write of every key, then every new one, headers
// only, until the returned Follower is stopped. It returns once the writes
// present at the start were delivered, or after a short bound.
func (b *Bucket) Follow(ctx context.Context, fn Handler) (*follow.Follower, error) {
	return b.FollowKeys(ctx, []string{">"}, fn)
}

// FollowKeys is Follow for the keys matching any of patterns (keys, or
// key patterns with NATS wildcards: "job.=.>"), in one consumer.
func (b *Bucket) FollowKeys(ctx context.Context, patterns []string, fn Handler) (*follow.Follower, error) {
	filters := make([]string, len(patterns))
	for i, p := range patterns {
		filters[i] = b.prefix + p
	}
	return follow.StartSubjects(ctx, b.stream, b.nc, filters, func(subject string, seq uint64, stored time.Time, h nats.Header) {
		fn(b.Key(subject), seq, stored, h)
	})
}

// DataHandler is a Handler that also gets each write's value.
type DataHandler func(key string, rev uint64, stored time.Time, h nats.Header, value []byte)

// FollowData is Follow delivering the values too.
func (b *Bucket) FollowData(ctx context.Context, fn DataHandler) (*follow.Follower, error) {
	return follow.StartData(ctx, b.stream, b.nc, b.prefix+">", func(subject string, seq uint64, stored time.Time, h nats.Header, data []byte) {
		fn(b.Key(subject), seq, stored, h, data)
	})
}

// ServerTime reads the server's clock: the timestamp the server puts on
// the bucket's stream info, with the local time its answer arrived. The
// local time carries a monotonic reading, so a caller can advance the
// server's time by the time elapsed here without trusting this host's wall
// clock. The server time is zero when the server does not report one.
func (b *Bucket) ServerTime(ctx context.Context) (server, local time.Time, err error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opTimeout)
		defer cancel()
	}
	err = jsapi.Call(ctx, func(ctx context.Context) error {
		info, err := b.stream.Info(ctx)
		if err != nil {
			return err
		}
		server, local = info.TimeStamp, time.Now()
		return nil
	})
	return server, local, err
}
