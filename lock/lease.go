package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Lease is a held lock. A background goroutine renews it every
// RenewInterval until Release, or until it is lost; then Done is closed.
//
// The lease measures its validity locally, with the monotonic clock, from
// the moment before the write that acquired or last renewed it was sent,
// minus a safety margin (a tenth of the lease). If that local safe deadline
// passes without a confirmed renewal, the lease is lost even if the network
// is silent: the holder stops before the server can let another owner in.
type Lease struct {
	l     *Locker
	key   string
	id    string
	rec   record
	token uint64

	ctx    context.Context // cancelled by Release: stops renewal
	cancel context.CancelFunc
	exited chan struct{} // closed when the renewal goroutine returns

	// rev and deadline belong to the renewal goroutine while it runs, and
	// to Release after it has exited.
	rev      uint64
	deadline time.Time

	mu   sync.Mutex
	done chan struct{}
	err  error

	releaseOnce sync.Once
	releaseErr  error
}

func (l *Locker) newLease(key, id string, rec record, token, rev uint64, sent time.Time) *Lease {
	ctx, cancel := context.WithCancel(context.Background())
	rec.Token = token
	s := &Lease{
		l: l, key: key, id: id, rec: rec, token: token,
		ctx: ctx, cancel: cancel, exited: make(chan struct{}),
		rev: rev, deadline: l.safeDeadline(sent),
		done: make(chan struct{}),
	}
	l.log.Debug().Str("key", key).Str("owner", rec.Owner).Uint64("token", token).Msg("lock acquired")
	go s.keep()
	return s
}

func (l *Locker) safeDeadline(sent time.Time) time.Time {
	return sent.Add(l.opts.LeaseDuration - safetyMargin(l.opts.LeaseDuration))
}

// Key is the lease's key.
func (s *Lease) Key() string { return s.key }

// Owner is the owner id the lease was acquired with.
func (s *Lease) Owner() string { return s.rec.Owner }

// Token is the fencing token: the revision of the write that acquired the
// key. It is fixed for the life of the lease and strictly greater than the
// token of every earlier holder of the key, so a resource that remembers the
// highest token it has seen can reject a stale holder (one paused past its
// lease, say).
func (s *Lease) Token() uint64 { return s.token }

// Done is closed once the lease is released or lost.
func (s *Lease) Done() <-chan struct{} { return s.done }

// Err is nil while the lease is held and after a clean Release, and
// ErrLeaseLost once it was lost.
func (s *Lease) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// finish closes Done, recording err (nil for a release) unless already done.
func (s *Lease) finish(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.done:
	default:
		s.err = err
		close(s.done)
	}
}

func (s *Lease) lose(reason string) {
	s.l.log.Warn().Str("key", s.key).Str("owner", s.rec.Owner).Uint64("token", s.token).Str("reason", reason).Msg("lock lease lost")
	s.finish(ErrLeaseLost)
}

var errTaken = errors.New("key no longer holds this lease")

// keep renews the lease until Release or loss.
func (s *Lease) keep() {
	defer close(s.exited)
	o := s.l.opts
	deadline := time.NewTimer(time.Until(s.deadline))
	defer deadline.Stop()
	renew := time.NewTimer(o.RenewInterval)
	defer renew.Stop()
	for retry := 0; ; {
		select {
		case <-s.ctx.Done():
			return
		case <-deadline.C:
			s.lose("no renewal confirmed before the local safe deadline")
			return
		case <-renew.C:
		}
		sent := time.Now()
		err := s.renew(sent)
		switch {
		case err == nil:
			retry = 0
			s.deadline = s.l.safeDeadline(sent)
			deadline.Reset(time.Until(s.deadline))
			renew.Reset(o.RenewInterval)
		case errors.Is(err, errTaken):
			s.lose(err.Error())
			return
		case s.ctx.Err() != nil:
			return
		default:
			// Transient: retry soon, until the local deadline decides.
			s.l.log.Debug().Err(err).Str("key", s.key).Msg("lock renewal failed; retrying")
			renew.Reset(min(backoff(retry, o.AcquireRetryBaseDelay, o.AcquireRetryMaxDelay), max(time.Until(s.deadline), 0)))
			retry++
		}
	}
}

// renew re-arms the key's TTL with a compare-and-swap on the lease's
// revision. A conflict means another owner holds the key, unless the key
// holds a newer write of this very lease (a renewal whose reply was lost), in
// which case the renewal is retried against that revision.
func (s *Lease) renew(sent time.Time) error {
	ctx, cancel := context.WithDeadline(s.ctx, s.deadline)
	defer cancel()
	rec := s.rec
	rec.ExpiresAt = sent.Add(s.l.opts.LeaseDuration).UTC()
	value := rec.encode()
	rev, err := s.l.write(ctx, s.key, value, s.rev)
	if err == nil {
		s.rev = rev
		return nil
	}
	if !isConflict(err) {
		return err
	}
	e, err := s.l.last(ctx, s.key)
	if err != nil {
		return err
	}
	if e == nil || e.free || e.recErr != nil || e.rec.Lease != s.id || e.rev == s.rev {
		if e != nil && !e.free {
			return fmt.Errorf("%w: now held by %s", errTaken, e.holder(s.key))
		}
		return fmt.Errorf("%w: the key was released or expired", errTaken)
	}
	rev, err = s.l.write(ctx, s.key, value, e.rev)
	switch {
	case err == nil:
		s.rev = rev
		return nil
	case isConflict(err):
		return errTaken
	}
	return err
}

// Release stops renewal and deletes the key if it still holds this lease's
// revision (compare-and-swap), so it never frees another owner's lock. If the
// lease was already lost, expired or taken, Release returns nil. It is
// idempotent, closes Done, and when it returns no goroutine of the lease
// remains. ctx bounds the delete.
func (s *Lease) Release(ctx context.Context) error {
	s.releaseOnce.Do(func() {
		s.cancel()
		<-s.exited // no renewal in flight from here on
		s.releaseErr = s.release(ctx)
		s.finish(nil)
	})
	return s.releaseErr
}

func (s *Lease) release(ctx context.Context) error {
	lost := s.Err() != nil
	err := s.l.free(ctx, s.key, s.rev)
	freed := err == nil
	if isConflict(err) {
		// A renewal cancelled in flight may have landed after all: the key
		// may hold a newer revision of this lease.
		e, lerr := s.l.last(ctx, s.key)
		switch {
		case lerr != nil:
			err = lerr
		case e != nil && !e.free && e.recErr == nil && e.rec.Lease == s.id:
			err = s.l.free(ctx, s.key, e.rev)
			freed = err == nil
		default:
			err = nil // taken or expired: nothing of ours to free
		}
		if isConflict(err) {
			err = nil
		}
	}
	switch {
	case err == nil:
		if freed {
			s.l.log.Debug().Str("key", s.key).Uint64("token", s.token).Msg("lock released")
		}
		return nil
	case lost:
		return nil // best effort; the server's TTL frees the key
	}
	return fmt.Errorf("lock: release %q: %w (the server frees it within %v)", s.key, err, s.l.opts.LeaseDuration)
}

// Close releases the lease with a bounded internal timeout, for defer.
func (s *Lease) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	return s.Release(ctx)
}
