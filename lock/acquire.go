package lock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"

	"github.com/cronlock/cronlock/internal/kv"
)

var errTimedOut = errors.New("acquire timeout")

// Acquire takes the lease on key for this Locker's owner, waiting while
// another owner holds it, up to the acquire timeout (WithTimeout; default
// 1.5 × AcquireRetryMaxDelay).
//
// A free key is taken with a single compare-and-swap write. While the key is
// held, Acquire retries with full-jitter exponential backoff between
// AcquireRetryBaseDelay and AcquireRetryMaxDelay, and wakes at once when the
// bucket watch reports the key released or expired.
//
// Errors: at the timeout, an error matching ErrNotAcquired that names the
// holder; when ctx is done first, ctx.Err(); when NATS fails (no reply, no
// stream, connection closed), an error wrapping the cause that does not
// match ErrNotAcquired. ctx bounds the acquisition only: the returned lease
// lives, renewed in the background, until Release or its loss.
func (l *Locker) Acquire(ctx context.Context, key string, opts ...AcquireOption) (*Lease, error) {
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	o := l.acquireOptions(opts)
	return l.acquire(ctx, key, o, time.Now().Add(o.timeout))
}

// AcquireAll takes the leases on all keys, or none: keys are acquired in
// sorted order (so two callers wanting overlapping sets cannot deadlock) and
// within one timeout for the whole set; on any failure the leases already
// taken are released and the error is returned. The leases are returned in
// the order of keys. Duplicate keys are an error.
func (l *Locker) AcquireAll(ctx context.Context, keys []string, opts ...AcquireOption) ([]*Lease, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("lock: AcquireAll: no keys")
	}
	for _, k := range keys {
		if err := ValidateKey(k); err != nil {
			return nil, err
		}
	}
	order := slices.Clone(keys)
	slices.Sort(order)
	for i := 1; i < len(order); i++ {
		if order[i] == order[i-1] {
			return nil, fmt.Errorf("lock: AcquireAll: key %q is listed twice", order[i])
		}
	}
	o := l.acquireOptions(opts)
	deadline := time.Now().Add(o.timeout)
	held := make(map[string]*Lease, len(keys))
	for _, k := range order {
		lease, err := l.acquire(ctx, k, o, deadline)
		if err != nil {
			for _, h := range held {
				h.Close()
			}
			return nil, err
		}
		held[k] = lease
	}
	out := make([]*Lease, len(keys))
	for i, k := range keys {
		out[i] = held[k]
	}
	return out, nil
}

func (l *Locker) acquireOptions(opts []AcquireOption) acquireOptions {
	o := acquireOptions{timeout: l.DefaultAcquireTimeout(), owner: l.opts.OwnerID}
	for _, f := range opts {
		if f != nil {
			f(&o)
		}
	}
	return o
}

func (l *Locker) acquire(ctx context.Context, key string, o acquireOptions, deadline time.Time) (*Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	tctx, cancel := context.WithDeadlineCause(ctx, deadline, errTimedOut)
	defer cancel()

	a := &attempt{l: l, key: key, owner: o.owner, id: nuid.Next()}
	var lastErr error
	useHint, contended := false, false
	unhurry := func() {}
	defer func() { unhurry() }()
	for n := 0; ; {
		wake := l.tracker.changed(key)
		lease, err := a.try(tctx, useHint)
		if lease != nil {
			return lease, nil
		}
		switch {
		case err == nil:
			if !contended {
				// Once per call, not per retry: says why Acquire blocks.
				l.log.Debug().Str("key", key).Str("holder", describe(a.holder)).Msg(logWaiting)
				// The release or expiry must wake us at once.
				unhurry = l.follower.Hurry()
			}
			contended, lastErr = true, nil
		case contended && tctx.Err() != nil && errors.Is(err, context.DeadlineExceeded):
			// An attempt cut short by the timeout after the key was seen
			// held: that is contention, not an outage.
		case errors.Is(err, nats.ErrConnectionClosed):
			// Closed for good: waiting cannot help.
			a.abandon()
			return nil, fmt.Errorf("lock: acquire %q: %w", key, err)
		default:
			lastErr = err
		}
		timer := time.NewTimer(backoff(n, l.opts.AcquireRetryBaseDelay, l.opts.AcquireRetryMaxDelay))
		select {
		case <-tctx.Done():
		case <-wake:
			useHint = true
		case <-timer.C:
			useHint = false // poll the server: the watch may be down
			n++
		}
		timer.Stop()
		if tctx.Err() != nil {
			break
		}
	}
	a.abandon()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if lastErr != nil {
		if errors.Is(lastErr, context.DeadlineExceeded) {
			return nil, fmt.Errorf("lock: acquire %q: no reply from NATS within %v: %w", key, o.timeout, lastErr)
		}
		return nil, fmt.Errorf("lock: acquire %q: %w", key, lastErr)
	}
	if a.holder == nil {
		// Name the holder in the error: one read, bounded.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.opts.AcquireRetryMaxDelay)
		if e, err := l.last(rctx, key); err == nil && e != nil && !e.free {
			h := e.holder(key)
			a.holder = &h
		}
		cancel()
	}
	nae := &NotAcquiredError{Key: key, Timeout: o.timeout}
	if a.holder != nil {
		nae.Holder = *a.holder
	}
	return nil, nae
}

// logWaiting is the debug message of an Acquire that found the key held and
// now waits for it to be freed.
const logWaiting = "lock held by another owner; waiting"

// attempt is one Acquire call: its lease id stays the same across retries,
// so a write whose reply was lost is recognised as ours on the next look.
type attempt struct {
	l     *Locker
	key   string
	owner string
	id    string
	// uncertain: a write failed without a verdict (timeout, disconnect) and
	// may have been stored. Cleared by a verdict.
	uncertain bool
	holder    *Holder // last holder seen
}

// try makes one attempt. It returns a lease, or (nil, nil) when another owner
// holds the key, or (nil, err) on a NATS failure. With useHint it trusts the
// watch's news that the key is held and spends no round trip.
func (a *attempt) try(ctx context.Context, useHint bool) (*Lease, error) {
	st, known := a.l.tracker.get(a.key)
	if !a.uncertain {
		if known && !st.free {
			if useHint {
				return nil, nil
			}
		} else {
			var expected uint64
			if known {
				expected = st.rev
			}
			lease, err := a.claim(ctx, expected)
			if err == nil || !kv.IsConflict(err) {
				return lease, err
			}
			if useHint && known {
				// Another waiter won the freed key: its write reaches us
				// on the watch; no need to read the key.
				return nil, nil
			}
		}
	}
	// The hint was wrong or missing, or a previous write of ours may have
	// landed: look at the key and write against what is there.
	e, err := a.l.last(ctx, a.key)
	if err != nil {
		return nil, err
	}
	var expected uint64
	switch {
	case e == nil:
	case e.free:
		expected = e.rev
	case e.recErr == nil && e.rec.Lease == a.id:
		return a.adopt(ctx, e)
	default:
		h := e.holder(a.key)
		a.holder = &h
		a.uncertain = false // whatever we wrote is gone: someone else holds the key
		return nil, nil
	}
	lease, err := a.claim(ctx, expected)
	if kv.IsConflict(err) {
		return nil, nil // lost the race for the freed key
	}
	return lease, err
}

// claim writes a fresh lock record against revision expected.
func (a *attempt) claim(ctx context.Context, expected uint64) (*Lease, error) {
	lease := a.l.opts.LeaseDuration
	sent := time.Now()
	rec := record{Owner: a.owner, Lease: a.id, AcquiredAt: sent.UTC(), ExpiresAt: sent.Add(lease).UTC()}
	rev, err := a.l.claimWrite(ctx, a.key, a.id, rec.encode(), expected)
	if err != nil {
		if !kv.IsConflict(err) {
			a.uncertain = true
		}
		return nil, err
	}
	a.uncertain = false
	return a.l.newLease(a.key, a.id, rec, rev, rev, sent), nil
}

// adopt takes over our own write found on the key after its reply was lost.
// The lease starts only once a compare-and-swap renewal confirms it, from
// the moment before that renewal was sent.
func (a *attempt) adopt(ctx context.Context, e *entry) (*Lease, error) {
	token := e.rec.Token
	if token == 0 {
		token = e.rev
	}
	sent := time.Now()
	rec := e.rec
	rec.Token = token
	rec.ExpiresAt = sent.Add(a.l.opts.LeaseDuration).UTC()
	rev, err := a.l.write(ctx, a.key, a.id, rec.encode(), e.rev)
	if err != nil {
		if kv.IsConflict(err) {
			a.uncertain = false
			return nil, nil
		}
		a.uncertain = true
		return nil, err
	}
	a.uncertain = false
	a.l.log.Debug().Str("key", a.key).Uint64("token", token).Msg("lock: recognised own write after a lost reply")
	return a.l.newLease(a.key, a.id, rec, token, rev, sent), nil
}

// abandon frees a write of ours that may have landed after the caller gave
// up, so a lost reply does not lock everyone out until the TTL.
func (a *attempt) abandon() {
	if !a.uncertain {
		return
	}
	if a.l.freeOwn(a.key, a.id) != nil {
		// NATS did not answer (the connection is down, say): the write may
		// still land, or have landed, and be sent on reconnect.
		a.l.freeLater(a.key, a.id)
	}
}

// describe renders a holder for logs: "another owner" while none was read.
func describe(h *Holder) string {
	if h == nil {
		return "another owner"
	}
	return h.String()
}
