package scheduler

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nuid"

	"github.com/cronlock/cronlock/internal/history"
	"github.com/cronlock/cronlock/internal/kv"
	"github.com/cronlock/cronlock/lock"
)

// A job's lock is its state record. Taking it is the same compare-and-swap
// write that claims the tick (or records a manual run, a rerun's start),
// and freeing it is the write that records the result: two stored writes
// per job-tick, where a lock of its own cost two more. The record says who
// holds it (history.Record.Holder) and, in history.HolderHeader, which lease, so every
// replica's headers-only watch of the history knows.
//
// The record has no TTL: a crashed holder's record must keep the tick it
// claimed, or a late replica could run that tick again once the TTL had
// erased it. Expiry is measured instead by each replica from what it saw:
// a hold it has watched go unchanged for a whole lease, by its own
// monotonic clock, is over. The holder renews by rewriting the record every
// RenewInterval, and stops (its run's context cancelled with
// lock.ErrLeaseLost, its child killed at the lease's local safe deadline)
// when no renewal is confirmed by LeaseDuration minus a tenth after the
// last confirmed one was sent. A write is seen after it is stored, which is
// after it was sent, so every replica's "a lease since I saw it" ends after
// the holder's own deadline, whatever the clocks say: no wall clock takes
// part, so skew cannot let two holders overlap. Any write of the record
// (a renewal, a suspension) starts the count again, which only delays a
// takeover.
//
// The first sight of a record counts as its write: a replica that starts
// while a job is held waits a whole lease before taking it over.

// holdTimes are the lease timings of holds, from the lock's options.
type holdTimes struct {
	lease, renew time.Duration
	retryBase    time.Duration
	retryMax     time.Duration
}

func holdTimesOf(o lock.Options) holdTimes {
	return holdTimes{lease: o.LeaseDuration, renew: o.RenewInterval, retryBase: o.AcquireRetryBaseDelay, retryMax: o.AcquireRetryMaxDelay}
}

// safeDeadline is the holder's local safe deadline for a write sent at
// sent: a tenth of the lease before any replica can count it over.
func (t holdTimes) safeDeadline(sent time.Time) time.Time {
	return sent.Add(t.lease - t.lease/10)
}

// nextToken returns the fencing token of a new hold on st: one more than
// any token the job's record knows, so tokens grow across holders, and
// across an update from releases whose tokens were the lock stream's
// sequence.
func nextToken(st *history.Record) uint64 {
	top := st.LastToken
	for _, r := range st.Runs {
		top = max(top, r.Token)
	}
	if st.Holder != nil {
		top = max(top, st.Holder.Token)
	}
	return top + 1
}

// takeOutcome says how an attempt to take a job's hold ended.
type takeOutcome int

const (
	taken    takeOutcome = iota
	refused              // the change said no (the tick was claimed already, ...)
	heldElse             // another live hold kept it until the timeout
)

// takeRequest is one attempt to take a job's hold, with the change it
// makes to the record in the same write.
type takeRequest struct {
	name    string
	timeout time.Duration
	// change edits the record that the hold is taken on; false refuses
	// (nothing is written). It may be called several times (conflicts, a
	// wait for the lock); the last call's effects are what was written.
	change func(st *history.Record, h *history.Hold) bool
	// claims, if not zero, is the tick that change claims: a record whose
	// headers show it claimed already is refused without being decoded
	// (claimSettled).
	claims time.Time
}

// errHoldUncertain wraps a NATS failure of a take whose write may have
// been stored; the hold is freed in the background.
var errHoldUncertain = errors.New("the write may have been stored")

// errNoVerdict is a take's error when its time ran out before it could
// look at the record.
var errNoVerdict = errors.New("no answer from NATS")

// errNotConnected is a take's error while the connection to NATS is down.
var errNotConnected = errors.New("not connected to NATS")

// take takes the job's hold and makes req.change in one write, waiting
// while another live hold keeps the record, up to req.timeout, and waking
// when the watch shows the record change or the hold's lease end. The
// timeout bounds the writes too; ctx bounds the waits. On taken it
// returns the held lock and the state written; on heldElse the error is a
// *lock.NotAcquiredError naming the holder.
//
// A write in flight when the client reconnects (its server killed, the
// link cut) has lost its reply, and it may have been stored. The take
// then looks at the record again at once: a record that holds this take's
// own lease is the take's, and the claim goes on from it while the hold's
// safe deadline (counted from that write's sending) has not passed; one
// that does not is claimed as before. Whatever the take ends with short
// of a hold, a write it is unsure of is freed in the background
// (unholdLater).
func (s *Scheduler) take(ctx context.Context, req takeRequest) (res takeResult, err error) {
	wctx, cancel := context.WithTimeout(ctx, req.timeout)
	defer cancel()
	t := &takeAttempt{req: req, id: nuid.Next()}
	deadline := time.Now().Add(req.timeout)
	defer func() {
		if t.unsure && res.lock == nil {
			s.unholdLater(req.name, t.id, true) // the write may have been stored
		}
	}()
	for {
		if !s.history.store.Bucket().Connected() {
			// A write now would wait in the client's reconnect buffer and
			// could be stored long after this take gave up: a tick claimed
			// that no one runs. Fail now, as NATS would.
			return takeResult{}, errNotConnected
		}
		changed := s.claims.onChange(req.name)
		seenToken := s.claims.token(req.name)
		sent := time.Now()
		if wctx.Err() != nil {
			if t.last == nil {
				// No look at the record within the timeout: NATS did not
				// answer in time, which is not contention.
				return takeResult{}, fmt.Errorf("%w within %v", errNoVerdict, req.timeout)
			}
			return s.notTaken(ctx, req, t.last)
		}
		st, newRev, err := s.takeWrite(ctx, t)
		for errors.Is(err, kv.ErrReconnected) && time.Now().Before(deadline) && s.history.store.Bucket().Connected() {
			// Look again at once, even if ctx ended meanwhile: the watch
			// may have delivered this very write, which is ours.
			t.cutShort(sent)
			sent = time.Now()
			st, newRev, err = s.takeWrite(ctx, t)
		}
		switch {
		case t.own:
			return s.adoptHold(t, st, seenToken)
		case errors.Is(err, history.ErrSettled):
			return takeResult{outcome: refused}, nil // nothing was written
		case err != nil:
			t.unsure = true
			return takeResult{}, fmt.Errorf("%w: %w", errHoldUncertain, err)
		case newRev != 0:
			s.reportUnstarted(t.dropped)
			s.checkToken(req.name, st.Holder.Token, seenToken)
			l := s.newHeldLock(req.name, st, newRev, t.sentOr(sent))
			l.waited = t.last != nil
			return takeResult{lock: l, outcome: taken}, nil
		case t.refusedByChange:
			return takeResult{outcome: refused}, nil
		}
		if !s.awaitHold(wctx, changed, t.wait) {
			return s.notTaken(ctx, req, t.holder)
		}
		t.last = t.holder
	}
}

// takeAttempt is the state of one take across its writes.
type takeAttempt struct {
	req takeRequest
	id  string // the hold's lease, kept across the take's writes
	// last is the hold that kept the record at the last look.
	last *history.Hold
	// Set by the last write's change:
	refusedByChange bool
	wait            time.Duration // while holder keeps the record
	holder          *history.Hold
	dropped         []Run // holds of ours that never started, dropped
	own             bool  // the record holds this take's lease (at ownRev)
	ownRev          uint64
	// cut is when the first write that a reconnect cut short was sent
	// (zero: none), and unsure that a write may have been stored unseen;
	// droppedByCut is what the last write cut short dropped.
	cut          time.Time
	unsure       bool
	droppedByCut []Run
}

// cutShort notes a write sent at sent whose reply the reconnect lost.
func (t *takeAttempt) cutShort(sent time.Time) {
	if t.cut.IsZero() {
		t.cut = sent
	}
	t.unsure = true
	t.droppedByCut = t.dropped // the last write's: a later one finds it stored, or writes its own
}

// sentOr is when the take's stored write may have been sent: the first
// one cut short, if any, since either may be the one stored.
func (t *takeAttempt) sentOr(sent time.Time) time.Time {
	if t.cut.IsZero() {
		return sent
	}
	return t.cut
}

// takeWrite makes one write of a take: the hold and the request's change,
// unless another live hold keeps the record (t.wait, t.holder), the
// change refuses (t.refusedByChange), or the record holds t's own lease
// already (t.own: a write whose reply was lost was stored). Its error is
// kv.ErrReconnected when the client reconnected while it was in flight.
//
// The write has the state timeout, as a claim always had (a read and a
// compare-and-swap, retried on conflicts, on a slow server), even when it
// starts at the end of the wait; and it does not end with ctx: the watch
// may deliver this very write (the tick claimed: the caller's ctx ends)
// before its acknowledgement, which must still be read. A take sends
// nothing while disconnected, so an outage still ends it at once.
func (s *Scheduler) takeWrite(ctx context.Context, t *takeAttempt) (history.Record, uint64, error) {
	bctx, unbind := s.reconnects.Bound(context.WithoutCancel(ctx))
	defer unbind()
	uctx, ucancel := context.WithTimeout(bctx, s.stateTimeout())
	defer ucancel()
	req := t.req
	st, newRev, err := s.history.updatePeek(uctx, req.name, s.absentGuess(req.name), 0, s.claimSettled(req, t.id), func(st *history.Record, rev uint64) bool {
		t.refusedByChange, t.wait, t.holder, t.dropped, t.own = false, 0, nil, nil, false
		if st.Holder != nil && st.Holder.Lease == t.id {
			t.own, t.ownRev = true, rev
			return false
		}
		if st.Holder != nil && s.unsure.has(req.name, st.Holder.Lease) {
			t.dropped = dropUnstarted(st) // our own take, stored after we gave up on it
		}
		if st.Holder != nil {
			if ok, w := s.claims.holdOver(req.name, st.Holder.Lease, rev, s.holds.lease, time.Now()); !ok {
				t.wait, t.holder = w, st.Holder
				return false
			}
		}
		now := s.now().UTC()
		h := &history.Hold{Owner: s.registry.ID(), Lease: t.id, Token: nextToken(st), Since: now, At: now}
		if !req.change(st, h) {
			t.refusedByChange = true
			return false
		}
		st.Holder, st.LastToken = h, h.Token
		return true
	})
	if err != nil {
		t.own = false // seen on a guess at most: only a read decides
	}
	return st, newRev, kv.Cut(uctx, err)
}

// adoptHold goes on with a hold of t's own lease that a write stored
// although its reply was lost (st, at t.ownRev): the record is the one
// that write made, and the change's outcome is its last call's, made for
// that write. Past its safe deadline the hold is not taken: another
// replica may count it over already.
func (s *Scheduler) adoptHold(t *takeAttempt, st history.Record, seenToken uint64) (takeResult, error) {
	sent := t.sentOr(time.Now())
	if !time.Now().Before(s.holds.safeDeadline(sent)) {
		return takeResult{}, fmt.Errorf("%w: stored, but found after its safe deadline", errHoldUncertain)
	}
	t.unsure = false
	s.reportUnstarted(t.droppedByCut)
	s.checkToken(t.req.name, st.Holder.Token, seenToken)
	s.log.Info().Str("job", t.req.name).Uint64("token", st.Holder.Token).
		Msg("the job's claim was stored although its reply was lost with the connection; going on with it")
	l := s.newHeldLock(t.req.name, st, t.ownRev, sent)
	l.waited = t.last != nil
	return takeResult{lock: l, outcome: taken}, nil
}

// absentGuess is the guess a take starts from: an empty record when the
// key is known not to exist (see claims.absent) and this replica has not
// touched it, so that a new job's first claim is one write, not a read of
// nothing and a write; nil (the cache's, or a read) otherwise. A wrong
// guess costs a refused write and a read.
func (s *Scheduler) absentGuess(key string) *history.Record {
	if s.history.store.Untouched(key) && s.claims.absent(key) {
		return &history.Record{}
	}
	return nil
}

// checkToken logs, loudly, a token handed out for the job that is not above
// the highest this replica had seen: fencing at the resource still holds
// for the tokens it saw, but the stream lost acknowledged writes.
func (s *Scheduler) checkToken(name string, token, seen uint64) {
	if token <= seen {
		s.log.Error().Str("job", name).Uint64("token", token).Uint64("highest_token", seen).
			Msg("fencing token went backwards: the NATS history stream lost acknowledged writes; check the servers' sync_interval and recent crashes")
	}
}

// notTaken is take's result when its time is up while another hold keeps
// the record (ctx's error if ctx ended first).
func (s *Scheduler) notTaken(ctx context.Context, req takeRequest, holder *history.Hold) (takeResult, error) {
	if err := ctx.Err(); err != nil {
		return takeResult{}, err
	}
	nae := &lock.NotAcquiredError{Key: req.name, Timeout: req.timeout}
	if holder != nil {
		nae.Holder = lock.Holder{Key: req.name, Owner: holder.Owner, Token: holder.Token, AcquiredAt: holder.Since}
	}
	return takeResult{outcome: heldElse}, nae
}

// takeResult is what take got: on taken, the lock.
type takeResult struct {
	lock    *heldLock
	outcome takeOutcome
}

// awaitHold waits until the watch shows the record changed, or wait has
// passed (the hold's lease may be over: look again), or ctx is done
// (false).
func (s *Scheduler) awaitHold(ctx context.Context, changed <-chan struct{}, wait time.Duration) bool {
	t := time.NewTimer(max(wait, time.Millisecond))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-changed:
	case <-t.C:
	}
	return true
}

// unholdLater frees, in the background, a hold that a take or a release
// whose verdict was lost may have left on the record (unstarted: a take's,
// whose run never started). Without it the job would stay locked for a
// lease after every lost reply. Meanwhile this replica's own takes treat
// that hold as free (see unsure). One goroutine per job serves all its
// pending leases, however many ticks an overload or an outage lasts: one
// per failed take fed the overload that caused the failures. It stops once
// NATS has answered that the record holds none of them and unholdSettle
// has passed since the last was added (a write whose verdict was lost can
// still be stored a moment later), or after two leases (by then a replica
// that saw the hold has taken it over).
func (s *Scheduler) unholdLater(name, id string, unstarted bool) {
	if !s.unsure.add(name, id, unstarted) {
		return // the job's goroutine runs: it takes this lease too
	}
	s.reapers.Add(1)
	go func() {
		defer s.reapers.Done()
		for pause := s.holds.retryBase; ; pause = min(2*pause, s.holds.retryMax) {
			p := s.unsure.pending(name)
			ctx, cancel := context.WithTimeout(context.Background(), s.holds.retryMax)
			dropped, err := s.history.unholdAny(ctx, name, p)
			cancel()
			if err == nil {
				s.reportUnstarted(dropped)
				pause = s.holds.retryBase
			}
			if s.unsure.done(name, len(p.ids), err == nil, s.holds.lease) {
				return
			}
			select {
			case <-s.closing:
				s.unsure.drop(name)
				return
			case <-time.After(pause):
			}
		}
	}()
}

// unholdSettle is how long unholdLater goes on looking after NATS first
// answers that no pending lease holds the record.
const unholdSettle = time.Second

// dropUnstarted frees st's hold and records its run, which never started
// (the take's write was stored after its replica had given up on it), as
// what it is: a scheduled tick missed for an outage, a manual run or a
// rerun cancelled before it started. It returns the entries changed.
func dropUnstarted(st *history.Record) []Run {
	p := st.Holder
	st.Holder = nil
	var out []Run
	for i := range st.Runs {
		r := &st.Runs[i]
		if r.Status != StatusRunning || r.Owner != p.Owner || r.Token != p.Token {
			continue
		}
		if r.Manual || r.Attempts > 0 {
			r.Status, r.Error = StatusCancelled, "not started: NATS did not confirm the start in time"
		} else {
			g := gap{n: 1, first: r.Tick, last: r.Tick, reason: ReasonOutage}
			r.Status, r.Reason, r.Ticks, r.Error = StatusMissed, ReasonOutage, 1, missedText(g, "")
			r.Owner, r.Token, r.Start = "", 0, time.Time{}
		}
		out = append(out, *r)
	}
	return out
}

// reportUnstarted counts and reports runs that dropUnstarted changed.
func (s *Scheduler) reportUnstarted(runs []Run) {
	for _, r := range runs {
		if r.Status == StatusMissed {
			s.m.missed.WithLabelValues(r.Job, string(r.Reason)).Add(1)
		}
		s.result(r)
	}
}

// unsureHolds are the leases of this replica's takes and releases whose
// write had no verdict, by job, while unholdLater frees them.
type unsureHolds struct {
	mu sync.Mutex
	m  map[string]*unsureJob
}

type unsureJob struct {
	ids       []string
	unstarted map[string]bool
	added     time.Time // when the last lease was added
	clean     time.Time // since when NATS answers that none holds the record
}

// pendingHolds is a snapshot of a job's pending leases.
type pendingHolds struct {
	ids       []string
	unstarted map[string]bool
}

// add notes a lease; true if the job had none pending (start its
// goroutine).
func (u *unsureHolds) add(name, id string, unstarted bool) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.m == nil {
		u.m = map[string]*unsureJob{}
	}
	j, ok := u.m[name]
	if !ok {
		j = &unsureJob{unstarted: map[string]bool{}}
		u.m[name] = j
	}
	j.ids = append(j.ids, id)
	j.unstarted[id] = unstarted
	j.added, j.clean = time.Now(), time.Time{}
	return !ok
}

func (u *unsureHolds) pending(name string) pendingHolds {
	u.mu.Lock()
	defer u.mu.Unlock()
	j := u.m[name]
	if j == nil {
		return pendingHolds{}
	}
	return pendingHolds{ids: slices.Clone(j.ids), unstarted: maps.Clone(j.unstarted)}
}

// done reports whether the job's goroutine may stop after a look at the
// record that saw n leases (answered: NATS answered that none holds it
// now), and forgets the job's leases if so.
func (u *unsureHolds) done(name string, n int, answered bool, lease time.Duration) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	j := u.m[name]
	switch {
	case j == nil:
		return true
	case time.Since(j.added) > 2*lease:
	case !answered || len(j.ids) > n:
		j.clean = time.Time{}
		return false
	case j.clean.IsZero():
		j.clean = time.Now()
		return false
	case time.Since(j.clean) < unholdSettle:
		return false
	}
	delete(u.m, name)
	return true
}

func (u *unsureHolds) drop(name string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.m, name)
}

func (u *unsureHolds) has(name, id string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	j := u.m[name]
	return j != nil && slices.Contains(j.ids, id)
}
