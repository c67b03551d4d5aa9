package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cronlock/cronlock/internal/kv"
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

	stop   context.Context // cancelled by Release: stops renewal
	cancel context.CancelFunc
	exited chan struct{} // closed when the renewal goroutine returns

	// rev belongs to the renewal goroutine while it runs, and to Release
	// after it has exited.
	rev uint64

	mu       sync.Mutex
	deadline time.Time     // local safe deadline
	moved    chan struct{} // closed when deadline changes or the lease ends
	done     chan struct{}
	err      error
	ctx      context.Context // cancelled with done; see Context
	end      context.CancelCauseFunc

	releaseOnce sync.Once
	releaseErr  error
}

func (l *Locker) newLease(key, id string, rec record, token, rev uint64, sent time.Time) *Lease {
	stop, cancel := context.WithCancel(context.Background())
	ctx, end := context.WithCancelCause(context.Background())
	rec.Token = token
	s := &Lease{
		l: l, key: key, id: id, rec: rec, token: token,
		stop: stop, cancel: cancel, exited: make(chan struct{}),
		rev: rev, deadline: l.safeDeadline(sent), moved: make(chan struct{}),
		done: make(chan struct{}), ctx: ctx, end: end,
	}
	l.log.Debug().Str("key", key).Str("owner", rec.Owner).Uint64("token", token).Msg("lock acquired")
	l.held.add(s)
	l.follower.Wake() // a loss of s must be seen within watchInterval
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

// Context returns a context that is cancelled when the lease is released
// or lost; its cause (context.Cause) is ErrLeaseLost after a loss and
// context.Canceled after a release. Work done under the lease derives its
// context from it.
func (s *Lease) Context() context.Context { return s.ctx }

// Deadline returns the lease's local safe deadline, the moment its holder
// must have stopped unless a renewal is confirmed first, and a channel that
// is closed when it changes: a renewal moved it, or the lease ended. After
// a loss the deadline is the moment of the loss. A supervisor of work that
// can outlive a frozen holder (a child process) enforces it on its own.
func (s *Lease) Deadline() (time.Time, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deadline, s.moved
}

// setDeadline moves the local safe deadline and wakes Deadline's callers.
func (s *Lease) setDeadline(d time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deadline = d
	close(s.moved)
	s.moved = make(chan struct{})
}

func (s *Lease) localDeadline() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deadline
}

// Err is nil while the lease is held and after a clean Release, and
// ErrLeaseLost once it was lost.
func (s *Lease) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// finish closes Done, recording err (nil for a release) unless already
// done, and cancels Context. It reports whether this call ended the lease.
func (s *Lease) finish(err error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.done:
		return false
	default:
	}
	s.err = err
	if err != nil {
		s.deadline = time.Now()
	}
	close(s.moved)
	s.moved = make(chan struct{})
	close(s.done)
	s.l.held.remove(s)
	if err == nil {
		err = context.Canceled
	}
	s.end(err)
	return true
}

func (s *Lease) lose(reason string) {
	if s.finish(ErrLeaseLost) {
		s.l.log.Warn().Str("key", s.key).Str("owner", s.rec.Owner).Uint64("token", s.token).Str("reason", reason).Msg("lock lease lost")
	}
}

var errTaken = errors.New("key no longer holds this lease")

// keep renews the lease until Release or loss.
func (s *Lease) keep() {
	defer close(s.exited)
	o := s.l.opts
	deadline := time.NewTimer(time.Until(s.localDeadline()))
	defer deadline.Stop()
	renew := time.NewTimer(o.RenewInterval)
	defer renew.Stop()
	for retry := 0; ; {
		select {
		case <-s.stop.Done():
			return
		case <-s.done: // lost: the watch saw another write on the key
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
			d := s.l.safeDeadline(sent)
			s.setDeadline(d)
			deadline.Reset(time.Until(d))
			renew.Reset(o.RenewInterval)
		case errors.Is(err, errTaken):
			s.lose(err.Error())
			return
		case s.stop.Err() != nil:
			return
		default:
			// Transient: retry soon, until the local deadline decides.
			s.l.log.Debug().Err(err).Str("key", s.key).Msg("lock renewal failed; retrying")
			renew.Reset(min(backoff(retry, o.AcquireRetryBaseDelay, o.AcquireRetryMaxDelay), max(time.Until(s.localDeadline()), 0)))
			retry++
		}
	}
}

// renew re-arms the key's TTL with a compare-and-swap on the lease's
// revision. A conflict means another owner holds the key, unless the key
// holds a newer write of this very lease (a renewal whose reply was lost), in
// which case the renewal is retried against that revision.
func (s *Lease) renew(sent time.Time) error {
	ctx, cancel := context.WithDeadline(s.stop, s.localDeadline())
	defer cancel()
	rec := s.rec
	rec.ExpiresAt = sent.Add(s.l.opts.LeaseDuration).UTC()
	value := rec.encode()
	rev, err := s.l.write(ctx, s.key, s.id, value, s.rev)
	if err == nil {
		s.rev = rev
		return nil
	}
	if !kv.IsConflict(err) {
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
	rev, err = s.l.write(ctx, s.key, s.id, value, e.rev)
	switch {
	case err == nil:
		s.rev = rev
		return nil
	case kv.IsConflict(err):
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
		<-s.exited         // no renewal in flight from here on
		s.l.held.remove(s) // our own purge must not read as a loss
		s.releaseErr = s.release(ctx)
		s.finish(nil)
	})
	return s.releaseErr
}

func (s *Lease) release(ctx context.Context) error {
	lost := s.Err() != nil
	err := s.l.free(ctx, s.key, s.rev)
	freed := err == nil
	if kv.IsConflict(err) {
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
		if kv.IsConflict(err) {
			// The read was stale (a follower behind a renewal that landed):
			// keep trying until the key no longer holds this lease.
			s.l.freeLater(s.key, s.id)
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
		s.l.freeLater(s.key, s.id)
		return nil // best effort; freed when NATS answers, or by the server's TTL
	}
	s.l.freeLater(s.key, s.id)
	return fmt.Errorf("lock: release %q: %w (freed as soon as NATS answers, or by the server within %v)", s.key, err, s.l.opts.LeaseDuration)
}

// Close releases the lease with a bounded internal timeout, for defer.
func (s *Lease) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	return s.Release(ctx)
}
