package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/follow"
	"github.com/cronlock/cronlock/internal/kv"
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
	bucket  *kv.Bucket
	nc      *nats.Conn // for freeLater: whether writes may come from the reconnect buffer
	opts    Options
	log     zerolog.Logger
	tracker *tracker
	held    leases // live leases, which the watch ends on a foreign write

	closeOnce sync.Once
	closing   chan struct{} // closed by Close: background clean-ups stop
	follower  *follow.Paced
	reapers   sync.WaitGroup // see reap
	// frees holds, by key, the lease ids freeLater still has to free; a
	// key is present while its goroutine runs.
	freeMu sync.Mutex
	frees  map[string][]string
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
	b, err := kv.Open(ctx, js, kv.Config{
		Name:        o.Bucket,
		Description: "cronlock leases: one key per lock, expired by per-key TTL",
		Replicas:    o.Replicas,
		MarkerTTL:   markerTTL,
	})
	switch {
	case errors.Is(err, kv.ErrNoMsgTTL):
		return nil, fmt.Errorf("lock: %w: %w", err, ErrServerTooOld)
	case err != nil:
		return nil, fmt.Errorf("lock: %w", err)
	}
	l := &Locker{bucket: b, nc: js.Conn(), opts: o, log: o.Logger, tracker: newTracker(), closing: make(chan struct{}), frees: map[string][]string{}}
	if l.follower, err = l.watch(ctx); err != nil {
		return nil, fmt.Errorf("lock: watch bucket %q: %w", o.Bucket, err)
	}
	return l, nil
}

// Close stops the Locker's watch of the bucket and waits (a few seconds at
// most) for the clean-up of abandoned acquiring writes. It does not release
// leases.
func (l *Locker) Close() error {
	l.closeOnce.Do(func() {
		if l.follower != nil {
			l.follower.Stop()
		}
		// Give pending clean-ups (freeLater: a release NATS did not take)
		// a moment, so a clean shutdown leaves no key held; then stop them.
		done := make(chan struct{})
		go func() {
			l.reapers.Wait()
			close(done)
		}()
		t := time.NewTimer(closeGrace)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
		}
		close(l.closing)
		<-done
	})
	return nil
}

// closeGrace bounds how long Close waits for pending clean-ups before
// stopping them.
const closeGrace = 2 * time.Second

// Options returns the Locker's options with defaults applied.
func (l *Locker) Options() Options { return l.opts }

// DefaultAcquireTimeout is the timeout Acquire uses without WithTimeout:
// 1.5 × AcquireRetryMaxDelay.
func (l *Locker) DefaultAcquireTimeout() time.Duration {
	return l.opts.AcquireRetryMaxDelay * 3 / 2
}

// write stores value on key if the key's last revision is expected (0: the
// key has no message at all), with the lease as the key's TTL. The returned
// revision comes from the server's acknowledgement.
func (l *Locker) write(ctx context.Context, key, id string, value []byte, expected uint64) (uint64, error) {
	rev, err := l.bucket.Put(ctx, l.leaseWrite(key, id, value, expected))
	l.heard(key, expected, keyState{rev: rev}, err)
	return rev, err
}

// leaseWrite is a write of lease id's record, with the lease as the key's
// TTL and the id in a header for the watch.
func (l *Locker) leaseWrite(key, id string, value []byte, expected uint64) kv.Write {
	return kv.Write{Key: key, Value: value, Expected: expected, TTL: l.opts.LeaseDuration,
		Header: nats.Header{leaseHeader: []string{id}}}
}

// heard feeds the tracker with the outcome of a write against expected.
func (l *Locker) heard(key string, expected uint64, st keyState, err error) {
	switch {
	case err == nil:
		l.tracker.observe(key, st)
	case kv.IsConflict(err):
		l.tracker.forget(key, expected)
	}
}

// claimWrite is write for an acquiring write. If ctx ends before the server
// answers, the write may still be stored; a reaper then frees it as soon as
// its acknowledgement arrives, so a late write does not hold the key for a
// whole lease after its caller gave up.
func (l *Locker) claimWrite(ctx context.Context, key, id string, value []byte, expected uint64) (uint64, error) {
	fut, err := l.bucket.PutAsync(l.leaseWrite(key, id, value, expected))
	if err != nil {
		return 0, err
	}
	select {
	case ack := <-fut.Ok():
		l.heard(key, expected, keyState{rev: ack.Sequence}, nil)
		return ack.Sequence, nil
	case err := <-fut.Err():
		l.heard(key, expected, keyState{}, err)
		return 0, err
	case <-ctx.Done():
		l.reap(key, id, fut)
		return 0, ctx.Err()
	}
}

// reap waits (bounded) for the answer to an abandoned acquiring write of
// lease id and frees the key if the write was stored. When the answer is
// lost instead (the connection dropped: nats.go fails pending
// acknowledgements on reconnect, and the write may still be stored from
// the client's reconnect buffer), freeLater takes over.
func (l *Locker) reap(key, id string, fut jetstream.PubAckFuture) {
	l.reapers.Add(1)
	go func() {
		defer l.reapers.Done()
		t := time.NewTimer(opTimeout)
		defer t.Stop()
		select {
		case ack := <-fut.Ok():
			ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
			defer cancel()
			if err := l.free(ctx, key, ack.Sequence); err == nil {
				l.log.Debug().Str("key", key).Msg("lock: freed an acquiring write that landed after its caller gave up")
			}
		case err := <-fut.Err():
			if errors.Is(err, nats.ErrDisconnected) { // the write may still go out from the reconnect buffer
				l.freeLater(key, id)
			}
		case <-t.C: // no answer at all: the key's TTL frees it
		}
	}()
}

// free places a purge marker on key if its last revision is expected, or
// unconditionally when expected is 0. The marker wakes watchers and carries
// its own TTL, so released keys do not pile up.
func (l *Locker) free(ctx context.Context, key string, expected uint64) error {
	rev, err := l.bucket.Purge(ctx, key, expected, markerTTL)
	l.heard(key, expected, keyState{rev: rev, free: true}, err)
	return err
}

// entry is the last message stored for a key.
type entry struct {
	rev    uint64
	free   bool
	rec    record
	recErr error     // the value is not a lock record
	stored time.Time // server time of the write
	ttl    time.Duration
}

// last reads the key's last message (kv.Bucket.Last: a direct get). nil
// with a nil error means the key has no message. Like every read here, the
// result is a hint; ownership is decided by compare-and-swap writes only.
func (l *Locker) last(ctx context.Context, key string) (*entry, error) {
	m, err := l.bucket.Last(ctx, key)
	if err != nil {
		return nil, err
	}
	if m == nil {
		l.tracker.observe(key, keyState{free: true})
		return nil, nil
	}
	e := &entry{rev: m.Revision, free: m.Free, stored: m.Stored, ttl: m.TTL}
	if !e.free {
		e.rec, e.recErr = decodeRecord(m.Value)
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
	names, err := l.bucket.Keys(ctx)
	if err != nil {
		return nil, fmt.Errorf("lock: list: %w", err)
	}
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
		if kv.IsConflict(err) {
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
