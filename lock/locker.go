package lock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// markerTTL is how long the server keeps the marker it places when a key's
// TTL expires, and how long a release marker lives. Markers wake watchers;
// after this the key's subject is empty again.
const markerTTL = time.Hour

// opTimeout bounds a single request to the server when the caller's context
// has no deadline, and the clean-up writes done on the caller's behalf.
const opTimeout = 5 * time.Second

// Locker acquires leases on keys of one JetStream Key-Value bucket. It is
// safe for concurrent use. Close stops its watch; leases it handed out keep
// working until released or lost.
type Locker struct {
	js            jetstream.JetStream
	nc            *nats.Conn
	opts          Options
	log           zerolog.Logger
	stream        jetstream.Stream
	streamName    string
	subjectPrefix string // "$KV.<bucket>."
	tracker       *tracker

	closeOnce sync.Once
	consume   jetstream.ConsumeContext
}

// New returns a Locker on the bucket opts.Bucket, creating the bucket when it
// is missing (history 1, opts.Replicas, per-key TTLs with limit markers). It
// fails with an error naming the setting when an existing bucket cannot
// work, and with ErrServerTooOld on a server without per-message TTLs.
func New(ctx context.Context, js jetstream.JetStream, opts Options) (*Locker, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	l := &Locker{
		js:            js,
		nc:            js.Conn(),
		opts:          o,
		log:           o.Logger,
		streamName:    "KV_" + o.Bucket,
		subjectPrefix: "$KV." + o.Bucket + ".",
		tracker:       newTracker(),
	}
	if err := l.ensureBucket(ctx); err != nil {
		return nil, err
	}
	if l.consume, err = l.watch(ctx); err != nil {
		return nil, fmt.Errorf("lock: watch bucket %q: %w", o.Bucket, err)
	}
	return l, nil
}

func (l *Locker) ensureBucket(ctx context.Context) error {
	bucket := l.opts.Bucket
	_, err := l.js.KeyValue(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		_, err = l.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:         bucket,
			Description:    "cronlock leases: one key per lock, expired by per-key TTL",
			History:        1,
			Replicas:       l.opts.Replicas,
			Storage:        jetstream.FileStorage,
			LimitMarkerTTL: markerTTL,
		})
		if errors.Is(err, jetstream.ErrBucketExists) { // created concurrently
			_, err = l.js.KeyValue(ctx, bucket)
		}
	}
	switch {
	case errors.Is(err, jetstream.ErrLimitMarkerTTLNotSupported):
		return fmt.Errorf("lock: create bucket %q: %w", bucket, ErrServerTooOld)
	case err != nil:
		return fmt.Errorf("lock: open bucket %q: %w", bucket, err)
	}
	l.stream, err = l.js.Stream(ctx, l.streamName)
	if err != nil {
		return fmt.Errorf("lock: open bucket %q: %w", bucket, err)
	}
	cfg := l.stream.CachedInfo().Config
	switch {
	case !cfg.AllowMsgTTL:
		return fmt.Errorf("lock: bucket %q does not allow per-key TTLs (it was created without LimitMarkerTTL, or the server is older than 2.11): recreate it with `nats kv add %s --history 1 --marker-ttl 1h`: %w", bucket, bucket, ErrServerTooOld)
	case cfg.SubjectDeleteMarkerTTL <= 0:
		return fmt.Errorf("lock: bucket %q has no LimitMarkerTTL: expiries would not be announced to waiters; recreate it with --marker-ttl", bucket)
	case cfg.MaxMsgsPerSubject != 1:
		return fmt.Errorf("lock: bucket %q keeps history %d: a lock bucket needs history 1 (with more, the server raises key TTLs to the marker TTL)", bucket, cfg.MaxMsgsPerSubject)
	}
	return nil
}

// Close stops the Locker's watch of the bucket. It does not release leases.
func (l *Locker) Close() error {
	l.closeOnce.Do(func() {
		if l.consume != nil {
			l.consume.Stop()
			// Stopping deletes the consumer on the server; while
			// disconnected that cannot happen (the server drops the
			// ephemeral consumer by itself), so do not wait for it.
			if l.nc.IsConnected() {
				select {
				case <-l.consume.Closed():
				case <-time.After(opTimeout):
				}
			}
		}
	})
	return nil
}

// JetStream returns the JetStream context the Locker writes through, so a
// caller can keep related state (such as a scheduler's run history) on the
// same connection.
func (l *Locker) JetStream() jetstream.JetStream { return l.js }

// Options returns the Locker's options with defaults applied.
func (l *Locker) Options() Options { return l.opts }

// DefaultAcquireTimeout is the timeout Acquire uses without WithTimeout:
// 1.5 × AcquireRetryMaxDelay.
func (l *Locker) DefaultAcquireTimeout() time.Duration {
	return l.opts.AcquireRetryMaxDelay * 3 / 2
}

func (l *Locker) subject(key string) string { return l.subjectPrefix + key }

// write stores value on key if the key's last revision is expected (0: the
// key has no message at all), with the lease as the key's TTL. The returned
// revision comes from the server's acknowledgement.
func (l *Locker) write(ctx context.Context, key string, value []byte, expected uint64) (uint64, error) {
	m := &nats.Msg{Subject: l.subject(key), Data: value, Header: nats.Header{}}
	ack, err := l.js.PublishMsg(ctx, m,
		jetstream.WithExpectLastSequencePerSubject(expected),
		jetstream.WithMsgTTL(l.opts.LeaseDuration))
	if err != nil {
		if isConflict(err) {
			l.tracker.forget(key)
		}
		return 0, err
	}
	l.tracker.observe(key, keyState{rev: ack.Sequence})
	return ack.Sequence, nil
}

// free places a purge marker on key if its last revision is expected, or
// unconditionally when expected is 0. The marker wakes watchers and carries
// its own TTL, so released keys do not pile up.
func (l *Locker) free(ctx context.Context, key string, expected uint64) error {
	m := nats.NewMsg(l.subject(key))
	m.Header.Set("KV-Operation", "PURGE")
	m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	opts := []jetstream.PublishOpt{jetstream.WithMsgTTL(markerTTL)}
	if expected != 0 {
		opts = append(opts, jetstream.WithExpectLastSequencePerSubject(expected))
	}
	ack, err := l.js.PublishMsg(ctx, m, opts...)
	if err != nil {
		if isConflict(err) {
			l.tracker.forget(key)
		}
		return err
	}
	l.tracker.observe(key, keyState{rev: ack.Sequence, free: true})
	return nil
}

// entry is the last message stored for a key, as read from the stream leader.
type entry struct {
	rev    uint64
	free   bool
	rec    record
	recErr error     // the value is not a lock record
	stored time.Time // server time of the write
	ttl    time.Duration
}

// last reads the key's last message from the stream leader (not a possibly
// stale follower, as a direct get might). nil with a nil error means the key
// has no message. Like every read, the result is a hint: ownership is decided
// by compare-and-swap writes only.
func (l *Locker) last(ctx context.Context, key string) (*entry, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opTimeout)
		defer cancel()
	}
	req, _ := json.Marshal(struct {
		LastBySubject string `json:"last_by_subj"`
	}{l.subject(key)})
	resp, err := l.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+l.streamName, req)
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) {
			return nil, fmt.Errorf("%w: %w", err, jetstream.ErrNoStreamResponse)
		}
		return nil, err
	}
	var r struct {
		Message *struct {
			Seq    uint64    `json:"seq"`
			Header []byte    `json:"hdrs"`
			Data   []byte    `json:"data"`
			Time   time.Time `json:"time"`
		} `json:"message"`
		Error *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(resp.Data, &r); err != nil {
		return nil, fmt.Errorf("lock: bad message-get response: %w", err)
	}
	if r.Error != nil {
		if r.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound {
			l.tracker.observe(key, keyState{free: true})
			return nil, nil
		}
		return nil, r.Error
	}
	if r.Message == nil {
		return nil, jetstream.ErrInvalidJetStreamResponse
	}
	var hdr nats.Header
	if len(r.Message.Header) > 0 {
		if hdr, err = nats.DecodeHeadersMsg(r.Message.Header); err != nil {
			return nil, fmt.Errorf("lock: bad message headers: %w", err)
		}
	}
	e := &entry{rev: r.Message.Seq, free: isFreeMarker(hdr), stored: r.Message.Time}
	if ttl := hdr.Get(jetstream.MsgTTLHeader); ttl != "" {
		e.ttl, _ = time.ParseDuration(ttl)
	}
	if !e.free {
		e.rec, e.recErr = decodeRecord(r.Message.Data)
	}
	l.tracker.observe(key, keyState{rev: e.rev, free: e.free})
	return e, nil
}

// holder describes a held entry.
func (e *entry) holder(key string) Holder {
	h := Holder{Key: key, Owner: e.rec.Owner, Token: e.rec.Token, AcquiredAt: e.rec.AcquiredAt, ExpiresAt: e.rec.ExpiresAt}
	if e.recErr != nil {
		h.Owner = "(not a lock record)"
	}
	if h.Token == 0 {
		h.Token = e.rev
	}
	if e.ttl > 0 && !e.stored.IsZero() {
		h.ExpiresAt = e.stored.Add(e.ttl) // the server's clock, which decides
	}
	return h
}

// Holder describes who holds a key.
type Holder struct {
	Key   string
	Owner string
	// Token is the holder's fencing token, as its Lease.Token().
	Token      uint64
	AcquiredAt time.Time
	// ExpiresAt is when the server frees the key unless it is renewed
	// (server clock).
	ExpiresAt time.Time
}

func (h Holder) String() string {
	return fmt.Sprintf("%s (token %d)", h.Owner, h.Token)
}

// Holder returns the current holder of key, or an error matching ErrNotHeld
// when the key is free.
func (l *Locker) Holder(ctx context.Context, key string) (Holder, error) {
	if err := ValidateKey(key); err != nil {
		return Holder{}, err
	}
	e, err := l.last(ctx, key)
	if err != nil {
		return Holder{}, fmt.Errorf("lock: read %q: %w", key, err)
	}
	if e == nil || e.free {
		return Holder{}, fmt.Errorf("lock: %q: %w", key, ErrNotHeld)
	}
	return e.holder(key), nil
}

// List returns the holders of every held key in the bucket, sorted by key.
func (l *Locker) List(ctx context.Context) ([]Holder, error) {
	kv, err := l.js.KeyValue(ctx, l.opts.Bucket)
	if err != nil {
		return nil, fmt.Errorf("lock: list: %w", err)
	}
	keys, err := kv.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("lock: list: %w", err)
	}
	var names []string
	for k := range keys.Keys() {
		names = append(names, k)
	}
	slices.Sort(names)
	var out []Holder
	for _, k := range names {
		h, err := l.Holder(ctx, k)
		if errors.Is(err, ErrNotHeld) {
			continue // released since it was listed
		}
		if err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, nil
}

// ForceRelease frees key whoever holds it, for operators clearing a lock
// whose holder is known to be gone. The holder's next renewal fails and its
// lease is lost. Returns an error matching ErrNotHeld when the key is free.
func (l *Locker) ForceRelease(ctx context.Context, key string) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	// Conditional on the revision just read, so a holder that acquired in
	// between is not thrown out unseen; a renewal racing with us changes the
	// revision, so look again a few times.
	for range 3 {
		e, err := l.last(ctx, key)
		if err != nil {
			return fmt.Errorf("lock: force-release %q: %w", key, err)
		}
		if e == nil || e.free {
			return fmt.Errorf("lock: force-release %q: %w", key, ErrNotHeld)
		}
		err = l.free(ctx, key, e.rev)
		if isConflict(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("lock: force-release %q: %w", key, err)
		}
		l.log.Warn().Str("key", key).Str("owner", e.rec.Owner).Uint64("token", e.holder(key).Token).Msg("lock force-released")
		return nil
	}
	return fmt.Errorf("lock: force-release %q: the key kept changing while releasing it", key)
}

// describe renders a holder for error messages.
func describe(h *Holder) string {
	if h == nil {
		return "another owner"
	}
	return h.String()
}
