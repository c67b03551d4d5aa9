package scheduler

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/history"
	"github.com/cronlock/cronlock/lock"
)

// Under overlap allow (job.OverlapAllow) ticks run side by side, up to
// the job's MaxParallel at once across all replicas. Such a run does not
// hold the job's record, which other runs of the job would wait for:
//
//   - its claim is one compare-and-swap of the record that moves the last
//     claimed tick on and takes the next fencing token, without a holder,
//     so each tick is still claimed once and tokens still grow per job;
//   - its lease is one of the job's MaxParallel slots, leases of the lock
//     package in the lock bucket ("=parallel.<job>.slot.<i>"), which bound
//     the runs at once and end with a replica that dies;
//   - its result is written into its own entry, freeing no holder.
//
// A tick that finds every slot taken is recorded missed with reason
// overlap. A cancel request names such a run by parallelID of its token.
// Manual runs, reruns and backfills of an allow job hold the job's record
// as under the other policies (one at a time among them) and take no slot:
// max_parallel bounds the runs of the job's ticks.

// parallelPrefix marks the lease id of a run under overlap allow.
const parallelPrefix = "parallel:"

func parallelID(token uint64) string { return parallelPrefix + strconv.FormatUint(token, 10) }

// parallelToken is the token of a parallel run's lease id, if it is one.
func parallelToken(id string) (uint64, bool) {
	rest, ok := strings.CutPrefix(id, parallelPrefix)
	if !ok {
		return 0, false
	}
	t, err := strconv.ParseUint(rest, 10, 64)
	return t, err == nil
}

func parallelSlotKey(name string, i int) string {
	return "=parallel." + name + ".slot." + strconv.Itoa(i)
}

// runParallel tries one tick of an allow job: claim it, take a slot, run
// it. It reports whether NATS answered (false: an outage, which the loop
// retries).
func (s *Scheduler) runParallel(e *entry, tick time.Time, gapReason Reason, log zerolog.Logger) bool {
	name := e.job.Name
	if s.claims.covers(name, tick) {
		s.skip(name, skipAlreadyRun, nil, log)
		return true
	}
	actx, claimedElsewhere := context.WithCancel(s.ctx)
	defer claimedElsewhere()
	defer s.claims.onClaim(name, tick, claimedElsewhere)()
	if err := s.waitTurn(actx, e, tick); err != nil {
		s.skip(name, s.cutShort(actx), nil, log)
		return true
	}
	started := false
	defer func() {
		if !started {
			s.slots.release()
		}
	}()
	run := Run{Job: name, Tick: tick, Start: s.now(), Status: StatusRunning, Parallel: true}
	var c claimed
	req := claimRequest{sched: e.sched, run: run, definition: e.job.Definition, gapReason: gapReason, gone: s.ownerGone(s.ctx)}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), s.stateTimeout())
	var tried []uint64 // in s.ownRuns before the write: no claim here takes them for abandoned
	st, rev, err := s.history.updateAt(ctx, name, nil, 0, func(st *history.Record, _ uint64) bool {
		token := nextToken(st)
		tried = append(tried, token)
		s.ownRuns.add(name, token)
		h := &history.Hold{Owner: s.registry.ID(), Lease: parallelID(token), Token: token, Since: s.now().UTC()}
		if !claimChange(req, &c)(st, h) {
			return false
		}
		st.LastToken = token
		return true
	})
	cancel()
	for _, t := range tried {
		if err != nil || rev == 0 || t != c.run.Token {
			s.ownRuns.remove(name, t)
		}
	}
	switch {
	case err != nil:
		s.skip(name, skipError, err, log)
		return s.answered(e, skipError)
	case rev == 0:
		s.skip(name, skipAlreadyRun, nil, log)
		return true
	}
	e.markOutage(false)
	for _, r := range c.recorded {
		s.result(r)
	}
	log = log.With().Str("owner", c.run.Owner).Uint64("token", c.run.Token).Logger()
	s.reportClaim(c, log)
	// The run goes on beside the job's loop, which moves on to the next
	// tick: that is what allow means on one replica too.
	started = true
	s.runs.Add(1)
	go func() {
		defer s.runs.Done()
		defer s.slots.release()
		defer s.ownRuns.remove(name, c.run.Token)
		s.runOnSlot(e, c.run, st, rev, log)
	}()
	return true
}

// runOnSlot runs a claimed parallel run on a free slot of the job, or
// records it missed (overlap) when every slot is taken.
func (s *Scheduler) runOnSlot(e *entry, run Run, st history.Record, rev uint64, log zerolog.Logger) {
	slot := s.parallelSlot(e)
	if slot == nil {
		run.End, run.Status, run.Reason, run.Ticks = s.now(), StatusMissed, ReasonOverlap, 1
		run.Error = "every one of the job's max_parallel slots was taken: " + strconv.Itoa(e.job.Parallel()) + " runs at once"
		run.Owner, run.Token, run.Start = "", 0, time.Time{}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), s.stateTimeout())
		defer cancel()
		recorded, _, err := s.history.record(ctx, resultEntry{run: run, guess: &st, rev: rev})
		if err != nil {
			log.Warn().Err(err).Msg("cannot record a tick missed for overlap (every parallel slot taken)")
		}
		s.m.missed.WithLabelValues(run.Job, string(ReasonOverlap)).Inc()
		log.Info().Int("max_parallel", e.job.Parallel()).Msg("tick missed: the job runs max_parallel runs already")
		s.result(recorded)
		return
	}
	lease := s.newParallelLock(e.job.Name, st, rev, run.Token, slot)
	defer lease.Release(context.Background())
	run.Start = s.now()
	s.runInGroup(s.hard, e, &run, lease, log)
}

// parallelSlot takes a free slot of the job's MaxParallel, or nil.
func (s *Scheduler) parallelSlot(e *entry) *lock.Lease {
	ctx, cancel := context.WithTimeout(s.ctx, s.stateTimeout())
	defer cancel()
	return s.groups.tryKeys(ctx, e.job.Parallel(), func(i int) string { return parallelSlotKey(e.job.Name, i) })
}

// newParallelLock is the lease of a parallel run: its slot's, renewed by
// the lock package; a loss of the slot is a loss of the lease.
func (s *Scheduler) newParallelLock(name string, written history.Record, rev, token uint64, slot *lock.Lease) *heldLock {
	ctx, end := context.WithCancelCause(context.Background())
	cctx, cend := context.WithCancelCause(ctx)
	l := &heldLock{s: s, name: name, owner: s.registry.ID(), id: parallelID(token), token: token, written: written, rev: rev,
		stop: make(chan struct{}), exited: make(chan struct{}), moved: make(chan struct{}),
		ctx: ctx, end: end, cancelled: cctx, cancelSoon: cend, slot: slot}
	close(l.exited) // nothing to renew here: the slot's lease renews itself
	context.AfterFunc(slot.Context(), func() {
		if errors.Is(slot.Err(), lock.ErrLeaseLost) {
			l.lose("the run's parallel slot (a lease in the lock bucket) was lost")
		}
	})
	l.followRecord() // for a cancel request
	return l
}

// parallelRuns are the parallel runs this replica has claimed and not yet
// recorded, by job and token: runs of its own that no claim may take for
// abandoned (see ownerGone).
type parallelRuns struct {
	mu sync.Mutex
	m  map[string]map[uint64]bool
}

func (p *parallelRuns) add(name string, token uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]map[uint64]bool{}
	}
	if p.m[name] == nil {
		p.m[name] = map[uint64]bool{}
	}
	p.m[name][token] = true
}

func (p *parallelRuns) remove(name string, token uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m[name], token)
	if len(p.m[name]) == 0 {
		delete(p.m, name)
	}
}

func (p *parallelRuns) has(name string, token uint64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.m[name][token]
}

// runningParallel are st's running entries of parallel runs.
func runningParallel(st *history.Record) []Run {
	var out []Run
	for _, r := range st.Runs {
		if r.Status == StatusRunning && r.Parallel {
			out = append(out, r)
		}
	}
	return out
}
