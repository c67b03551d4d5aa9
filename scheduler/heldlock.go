package scheduler

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/cronlock/cronlock/internal/history"
	"github.com/cronlock/cronlock/lock"
)

// heldLock is a job's hold as the replica holding it sees it: it renews
// the hold every RenewInterval and ends, with lock.ErrLeaseLost, when the
// record shows another hold or no renewal is confirmed by the local safe
// deadline (see hold.go); Release frees it if the result did not.
type heldLock struct {
	s     *Scheduler
	name  string
	owner string
	id    string
	token uint64
	// written and rev are the record as the take wrote it: the result's
	// write starts from them.
	written history.Record
	rev     uint64

	stop   chan struct{} // closed by settle: renewal ends
	exited chan struct{} // closed when the renewal goroutine returns, or settle stopped it from starting
	once   sync.Once
	// renewal starts keep at the first renewal: a run that ends before
	// then (most cron jobs' runs are shorter than RenewInterval) costs no
	// goroutine and no timers for it. nil: nothing to renew (parallel.go).
	renewal *time.Timer
	// followMu guards what following the record has seen (followrecord.go):
	// the watch's delivery of this hold's own write, a cancel request
	// acted on, and the end of following.
	followMu    sync.Mutex
	seenOwn     bool
	askedCancel bool
	unfollowed  bool

	mu       sync.Mutex
	deadline time.Time
	moved    chan struct{}
	lost     bool
	freed    bool // the record no longer holds it (its result freed it)
	released bool
	// guard is the lock bucket's key of the job, taken for an older
	// replica (compat.go); nil if none.
	guard *lock.Lease
	ctx   context.Context
	end   context.CancelCauseFunc
	// cancelled ends, with a *CancelledError, when the record asks this
	// hold's run to stop (see cancel.go).
	cancelled  context.Context
	cancelSoon context.CancelCauseFunc
	// queued is the latest tick the run's overlap policy queued
	// (overlap.go), which its result's write queues too.
	queued time.Time
	// bound, when set (a run holding a slot of its concurrency group), is
	// a lease whose end the run must not outlive either: Deadline is the
	// earlier of the two, so a frozen replica's child is killed before
	// the slot can pass to another run (groups.go).
	bound *lock.Lease
	// slot, for a run under overlap allow, is its lease (parallel.go):
	// the record holds no lease of it, and the slot's renewal keeps it.
	slot *lock.Lease
	// waited: the take waited for another hold to end first (a previous
	// run still in progress), so its time says nothing of how fast claims
	// are (ahead.go).
	waited bool
	// interruptions counts the interruptions of the run's tick before this
	// run (a rerun's: history.Rerun.Interruptions), for OnInterrupt; and
	// suspendAfter is the job's SuspendAfterFailures, for the result's
	// write.
	interruptions int
	suspendAfter  int
}

// newHeldLock starts the hold that written (at rev) records, taken with a
// write sent at sent.
func (s *Scheduler) newHeldLock(name string, written history.Record, rev uint64, sent time.Time) *heldLock {
	ctx, end := context.WithCancelCause(context.Background())
	cctx, cend := context.WithCancelCause(ctx)
	h := written.Holder
	l := &heldLock{s: s, name: name, owner: h.Owner, id: h.Lease, token: h.Token, written: written, rev: rev,
		stop: make(chan struct{}), exited: make(chan struct{}),
		deadline: s.holds.safeDeadline(sent), moved: make(chan struct{}), ctx: ctx, end: end,
		cancelled: cctx, cancelSoon: cend}
	s.inHand.add(l)
	// By the local safe deadline at the latest, whose timer keep sets.
	l.renewal = time.AfterFunc(min(s.holds.renew, time.Until(l.deadline)), l.keep)
	l.followRecord()
	return l
}

func (l *heldLock) Owner() string            { return l.owner }
func (l *heldLock) Token() uint64            { return l.token }
func (l *heldLock) Context() context.Context { return l.ctx }

// Cancelled is done when the record asks the run to stop; its cause is
// the *CancelledError. (It ends with the hold too, with another cause.)
func (l *heldLock) Cancelled() context.Context { return l.cancelled }

// Deadline is the local safe deadline and a channel closed when it moves.
func (l *heldLock) Deadline() (time.Time, <-chan struct{}) {
	var d time.Time
	var moved <-chan struct{}
	if l.slot != nil {
		d, moved = l.slot.Deadline()
	} else {
		l.mu.Lock()
		d, moved = l.deadline, l.moved
		l.mu.Unlock()
	}
	l.mu.Lock()
	bound := l.bound
	l.mu.Unlock()
	if bound != nil {
		// Callers ask again when the channel given closes; deadlines only
		// move later, or to now on a loss, which cancels the run anyway.
		if bd, bmoved := bound.Deadline(); bd.Before(d) {
			return bd, bmoved
		}
	}
	return d, moved
}

// boundBy makes the run end no later than lease does too (see bound).
func (l *heldLock) boundBy(lease *lock.Lease) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.bound = lease
}

func (l *heldLock) setDeadline(d time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.deadline = d
	close(l.moved)
	l.moved = make(chan struct{})
}

func (l *heldLock) localDeadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadline
}

// expired reports whether the hold's local safe deadline has passed, and
// if so loses it now, without waiting for keep's timer: after the process
// was frozen the timer fires only once it runs again, maybe after its
// caller has asked.
func (l *heldLock) expired() bool {
	if d, _ := l.Deadline(); time.Now().Before(d) {
		return false
	}
	l.lose("no renewal confirmed before the local safe deadline")
	return true
}

// keep renews the hold until settle or its loss, from its first renewal
// or the local safe deadline, whichever comes first (the renewal timer
// starts it then; the deadline comes first only for a frozen process, or
// a RenewInterval near the lease): past the deadline its timer here fires
// at once.
func (l *heldLock) keep() {
	defer close(l.exited)
	t := l.s.holds
	deadline := time.NewTimer(time.Until(l.localDeadline()))
	defer deadline.Stop()
	renew := time.NewTimer(0) // the first renewal is due
	defer renew.Stop()
	for retry := 0; ; {
		select {
		case <-l.stop:
			return
		case <-deadline.C:
			l.lose("no renewal confirmed before the local safe deadline")
			return
		case <-renew.C:
		}
		sent := time.Now()
		err := l.renew()
		switch {
		case err == nil:
			retry = 0
			d := t.safeDeadline(sent)
			l.setDeadline(d)
			deadline.Reset(time.Until(d))
			renew.Reset(t.renew)
		case errors.Is(err, errHoldTaken):
			l.lose(err.Error())
			return
		default:
			l.s.log.Debug().Err(err).Str("job", l.name).Msg("lock renewal failed; retrying")
			renew.Reset(min(holdBackoff(retry, t), max(time.Until(l.localDeadline()), 0)))
			retry++
		}
	}
}

func holdBackoff(n int, t holdTimes) time.Duration {
	d := t.retryBase << min(n, 16)
	return min(d, t.retryMax)
}

var errHoldTaken = errors.New("the job's record no longer holds this lease")

// renew rewrites the record while it holds this lease, within the local
// safe deadline.
func (l *heldLock) renew() error {
	ctx, cancel := context.WithDeadline(context.Background(), l.localDeadline())
	defer cancel()
	var mine bool
	_, _, err := l.s.history.update(ctx, l.name, nil, 0, func(st *history.Record) bool {
		mine = st.Holder != nil && st.Holder.Lease == l.id
		if mine {
			h := *st.Holder // a copy: the state's pointers are shared with the cache's copy
			h.At = l.s.now().UTC()
			st.Holder = &h
		}
		return mine
	})
	if err == nil && !mine {
		return errHoldTaken
	}
	return err
}

func (l *heldLock) lose(reason string) {
	l.mu.Lock()
	if l.lost {
		l.mu.Unlock()
		return
	}
	l.lost = true
	l.deadline = time.Now()
	close(l.moved)
	l.moved = make(chan struct{})
	l.mu.Unlock()
	l.end(lock.ErrLeaseLost)
	l.s.log.Warn().Str("job", l.name).Str("owner", l.owner).Uint64("token", l.token).Str("reason", reason).Msg("lock lease lost")
}

// settle stops the renewal and waits for it: the run has ended and its
// result is about to free the hold (a renewal after that would read as a
// loss).
func (l *heldLock) settle() {
	l.once.Do(func() {
		close(l.stop)
		l.unfollowRecord()
		if l.renewal != nil && l.renewal.Stop() {
			close(l.exited) // keep never started
		}
	})
	<-l.exited
}

// markFreed notes that a write of the record freed the hold.
func (l *heldLock) markFreed() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.freed = true
}

// Release frees the hold if no write has yet (a run whose result could
// not be recorded, a manual start that failed): a write of the record that
// clears the hold while it is this lease's. If NATS does not answer it
// keeps trying in the background; the hold ends for every replica a lease
// after its last write at the latest.
func (l *heldLock) Release(ctx context.Context) error {
	l.settle()
	if l.slot != nil {
		defer l.end(context.Canceled)
		return l.slot.Release(ctx)
	}
	l.s.inHand.remove(l)
	l.mu.Lock()
	freed, guard := l.freed, l.guard
	l.released, l.guard = true, nil
	l.mu.Unlock()
	if guard != nil {
		defer guard.Close()
	}
	defer l.end(context.Canceled)
	if freed {
		return nil
	}
	if err := l.s.history.unhold(ctx, l.name, l.id); err != nil {
		l.s.unholdLater(l.name, l.id, false)
		return err
	}
	l.markFreed()
	return nil
}

// guardWith keeps lease (the job's key in the lock bucket) until Release;
// false if the hold is released already.
func (l *heldLock) guardWith(lease *lock.Lease) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released || l.guard != nil {
		return false
	}
	l.guard = lease
	return true
}
