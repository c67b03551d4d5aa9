package kv

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cronlock/cronlock/internal/jsapi"
)

// ErrNoMsgTTL is returned by Open for a bucket that needs per-message TTLs
// when the server (older than 2.11) or the existing bucket cannot expire
// individual messages.
var ErrNoMsgTTL = errors.New("bucket cannot expire individual keys (per-message TTL)")

// Config describes a bucket for Open. The zero value of every field but
// Name selects its default.
type Config struct {
	// Name is the bucket's name.
	Name        string
	Description string
	// Replicas is the replication factor when Open creates the bucket.
	// Default 1.
	Replicas int
	// MarkerTTL, when positive, makes a bucket whose keys expire one by
	// one: the stream allows per-message TTLs, the server places a marker
	// living MarkerTTL when a key's TTL runs out, and the bucket keeps one
	// message per key. Open checks an existing bucket for all three.
	MarkerTTL time.Duration
	// History is how many revisions of each key a bucket that Open creates
	// keeps (1 to 64). Default 1.
	History int
}

// Bucket is an open KV bucket. It is safe for concurrent use.
type Bucket struct {
	js     jetstream.JetStream
	nc     *nats.Conn
	kv     jetstream.KeyValue
	stream jetstream.Stream
	name   string
	prefix string // "$KV.<bucket>.": stored subjects, what reads and watches filter on
	// writePrefix is what a write's subject starts with: prefix, behind the
	// JetStream API prefix when js reaches JetStream in another domain or
	// under another prefix (the hub of a leaf node): a plain "$KV..." write
	// from a leaf with its own JetStream would never reach the hub's stream.
	// nats.go's KeyValue.Put routes writes the same way.
	writePrefix string
}

// Open opens the bucket cfg.Name, creating it (history 1, file storage)
// when it is missing, and checks that an existing one fits cfg. Errors name
// the bucket and the setting at fault.
//
// Each JetStream API request is sent again when a cluster drops it (see
// jsapi), so ctx bounds the whole start-up, not one lost request.
func Open(ctx context.Context, js jetstream.JetStream, cfg Config) (*Bucket, error) {
	kv, err := openOrCreate(ctx, js, cfg)
	switch {
	case errors.Is(err, jetstream.ErrLimitMarkerTTLNotSupported):
		return nil, fmt.Errorf("create bucket %q: %w", cfg.Name, ErrNoMsgTTL)
	case errors.Is(err, nats.ErrNoResponders):
		return nil, fmt.Errorf("open bucket %q: nothing answers JetStream requests: is JetStream enabled on the server (and for this account, or this domain)? %w", cfg.Name, err)
	case err != nil:
		return nil, fmt.Errorf("open bucket %q: %w", cfg.Name, err)
	}
	var stream jetstream.Stream
	err = placed(ctx, func(ctx context.Context) (err error) {
		stream, err = js.Stream(ctx, "KV_"+cfg.Name)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("open bucket %q: %w", cfg.Name, err)
	}
	prefix := "$KV." + cfg.Name + "."
	b := &Bucket{js: js, nc: js.Conn(), kv: kv, stream: stream, name: cfg.Name, prefix: prefix,
		writePrefix: apiPrefix(js) + prefix}
	if cfg.MarkerTTL > 0 {
		if err := b.checkTTL(); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// openOrCreate looks the bucket up and creates it when it is missing.
func openOrCreate(ctx context.Context, js jetstream.JetStream, cfg Config) (jetstream.KeyValue, error) {
	var kv jetstream.KeyValue
	lookup := func(ctx context.Context) (err error) {
		kv, err = js.KeyValue(ctx, cfg.Name)
		return err
	}
	err := jsapi.Call(ctx, lookup)
	if !errors.Is(err, jetstream.ErrBucketNotFound) {
		return kv, err
	}
	err = jsapi.Call(ctx, func(ctx context.Context) (err error) {
		kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:         cfg.Name,
			Description:    cfg.Description,
			History:        uint8(min(max(cfg.History, 1), 64)),
			Replicas:       max(cfg.Replicas, 1),
			Storage:        jetstream.FileStorage,
			LimitMarkerTTL: cfg.MarkerTTL,
		})
		return err
	})
	if errors.Is(err, jetstream.ErrBucketExists) { // created concurrently, or our create's reply was lost
		err = placed(ctx, lookup)
	}
	return kv, err
}

// placedPause is the pause between lookups of a bucket being placed.
const placedPause = 100 * time.Millisecond

// placed is jsapi.Call for the lookup of a bucket known to exist: in a
// cluster, the peer answering can report its stream not found for a moment
// after it was created (by this replica or another, at the same start).
// Such answers are retried until ctx ends, which is then the error, so
// that the caller sees a cluster that did not answer, not a missing bucket.
func placed(ctx context.Context, fn func(context.Context) error) error {
	for {
		err := jsapi.Call(ctx, fn)
		if !errors.Is(err, jetstream.ErrStreamNotFound) && !errors.Is(err, jetstream.ErrBucketNotFound) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: the bucket exists but its stream is not found yet (%v)", ctx.Err(), err)
		case <-time.After(placedPause):
		}
	}
}

func (b *Bucket) checkTTL() error {
	cfg := b.stream.CachedInfo().Config
	switch {
	case !cfg.AllowMsgTTL:
		return fmt.Errorf("bucket %q does not allow per-key TTLs (it was created without LimitMarkerTTL, or the server is older than 2.11): recreate it with `nats kv add %s --history 1 --marker-ttl 1h`: %w", b.name, b.name, ErrNoMsgTTL)
	case cfg.SubjectDeleteMarkerTTL <= 0:
		return fmt.Errorf("bucket %q has no LimitMarkerTTL: expiries would not be announced to watchers; recreate it with --marker-ttl", b.name)
	case cfg.MaxMsgsPerSubject != 1:
		return fmt.Errorf("bucket %q keeps history %d: it needs history 1 (with more, the server raises key TTLs to the marker TTL)", b.name, cfg.MaxMsgsPerSubject)
	}
	return nil
}

// FewerReplicasError is CheckReplicas' answer for a bucket that keeps
// fewer copies than asked for: Open never changes an existing bucket, so
// a replication factor raised after its creation does not apply by itself.
type FewerReplicasError struct {
	Bucket     string
	Have, Want int
}

func (e *FewerReplicasError) Error() string {
	return fmt.Sprintf("bucket %q has %d replica(s), fewer than the %d asked for", e.Bucket, e.Have, e.Want)
}

// CheckReplicas returns a *FewerReplicasError when the bucket name exists
// with fewer than want replicas, nil when it has as many or more, and the
// lookup's error otherwise (ErrBucketNotFound for a missing bucket).
func CheckReplicas(ctx context.Context, js jetstream.JetStream, name string, want int) error {
	var stream jetstream.Stream
	err := jsapi.Call(ctx, func(ctx context.Context) (err error) {
		stream, err = js.Stream(ctx, "KV_"+name)
		return err
	})
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("bucket %q: %w", name, jetstream.ErrBucketNotFound)
	}
	if err != nil {
		return fmt.Errorf("bucket %q: %w", name, err)
	}
	if have := stream.CachedInfo().Config.Replicas; have < want {
		return &FewerReplicasError{Bucket: name, Have: max(have, 1), Want: want}
	}
	return nil
}

// KeyValue is the bucket as nats.go's KeyValue, for the reads it does
// well (a key's history).
func (b *Bucket) KeyValue() jetstream.KeyValue { return b.kv }

// Name is the bucket's name.
func (b *Bucket) Name() string { return b.name }

// Subject is the stream subject of key.
func (b *Bucket) Subject(key string) string { return b.prefix + key }

// Key is the key of a subject of this bucket.
func (b *Bucket) Key(subject string) string { return strings.TrimPrefix(subject, b.prefix) }

// Connected reports whether the bucket's connection is up now.
func (b *Bucket) Connected() bool { return b.nc.IsConnected() }

// Conn is the client connection the bucket uses.
func (b *Bucket) Conn() *nats.Conn { return b.nc }

// Keys returns the bucket's keys that hold a value, sorted.
func (b *Bucket) Keys(ctx context.Context) ([]string, error) {
	lister, err := b.kv.ListKeys(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for k := range lister.Keys() {
		out = append(out, k)
	}
	slices.Sort(out)
	return out, nil
}

// apiPrefix is "" on the account's own JetStream, else the prefix that
// routes a write to the JetStream js reaches ("$JS.<domain>.API.").
func apiPrefix(js jetstream.JetStream) string {
	o := js.Options()
	switch {
	case o.Domain != "":
		return "$JS." + o.Domain + ".API."
	case o.APIPrefix != "" && strings.TrimSuffix(o.APIPrefix, ".")+"." != jetstream.DefaultAPIPrefix:
		return strings.TrimSuffix(o.APIPrefix, ".") + "."
	}
	return ""
}
