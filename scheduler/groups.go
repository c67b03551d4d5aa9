package scheduler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/lock"
)

// Concurrency groups (job.Group) are leases of the lock package in the
// lock bucket, so a replica that dies frees its slot when its lease ends
// and no slot leaks:
//
//   - a slot is one of MaxRunning keys "=group.<name>.slot.<i>"; a run of a
//     group's job holds one from after its claim until its result;
//   - a tick that finds every slot held waits in line: it takes a ticket,
//     the key "=group.<name>.q.<tick>.<id>", and only the holder of the
//     oldest live ticket may take a slot that frees, so waiting ticks get
//     slots in tick order across all replicas; a dead waiter's ticket ends
//     with its lease.
//
// Job names cannot contain '=', so these keys never meet a job's lock key
// (the lock bucket's keys of older releases). The claim comes first: the
// tick is this replica's to run (or to record missed) before it waits,
// and its job's lock stays held, renewed, meanwhile.

// ReasonGroupFull: the tick waited for a slot of the job's concurrency
// group until its starting deadline (or, without one, found none free)
// and was not run (a missed entry).
const ReasonGroupFull Reason = "group_full"

// groupPoll is how often a waiting tick looks at the group's slots and
// tickets again.
const groupPoll = 100 * time.Millisecond

// errGroupFull is waitSlot's answer when the wait is over without a slot.
var errGroupFull = errors.New("the concurrency group is full")

// groupSlots takes the slots of concurrency groups.
type groupSlots struct {
	locker  *lock.Locker
	js      jetstream.JetStream
	timeout time.Duration // one acquisition of a free key
}

func slotKey(group string, i int) string { return "=group." + group + ".slot." + strconv.Itoa(i) }

func ticketPrefix(group string) string { return "=group." + group + ".q." }

// ticketKey orders by tick: 19 digits of Unix nanoseconds sort as numbers.
func ticketKey(group string, tick time.Time) string {
	return fmt.Sprintf("%s%019d.%s", ticketPrefix(group), tick.UnixNano(), nuid.Next())
}

// waitSlot takes a slot of g for a run of tick, waiting in line until
// until (no wait when it has passed). It returns errGroupFull when the
// wait is over, or ctx's error.
func (gs *groupSlots) waitSlot(ctx context.Context, g job.Group, tick, until time.Time) (*lock.Lease, error) {
	if l := gs.trySlot(ctx, g); l != nil && !gs.waiting(ctx, g, "") {
		return l, nil
	} else if l != nil {
		gs.release(l) // others were in line first
	}
	if !time.Now().Before(until) {
		return nil, errGroupFull
	}
	ticket, err := gs.locker.Acquire(ctx, ticketKey(g.Name, tick), lock.WithTimeout(gs.timeout))
	if err != nil {
		return nil, fmt.Errorf("group %s: take a place in line: %w", g.Name, err)
	}
	defer gs.release(ticket)
	t := time.NewTicker(groupPoll)
	defer t.Stop()
	for {
		if gs.first(ctx, g, ticket.Key()) {
			if l := gs.trySlot(ctx, g); l != nil {
				return l, nil
			}
		}
		if !time.Now().Before(until) {
			return nil, errGroupFull
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-ticket.Done():
			return nil, fmt.Errorf("group %s: place in line lost: %w", g.Name, ticket.Err())
		case <-t.C:
		}
	}
}

// trySlot takes a free slot of g, if one is free.
func (gs *groupSlots) trySlot(ctx context.Context, g job.Group) *lock.Lease {
	return gs.tryKeys(ctx, g.MaxRunning, func(i int) string { return slotKey(g.Name, i) })
}

// tryKeys takes the first of n slot keys that is free, if one is: a read
// of each (a held one costs no write), and one acquisition of a free one.
// Concurrency groups and the parallel slots of overlap allow share it.
func (gs *groupSlots) tryKeys(ctx context.Context, n int, key func(int) string) *lock.Lease {
	for i := range n {
		key := key(i)
		if _, err := gs.locker.Holder(ctx, key); !errors.Is(err, lock.ErrNotHeld) {
			continue // held, or NATS failed: try the next
		}
		if l, err := gs.locker.Acquire(ctx, key, lock.WithTimeout(gs.timeout)); err == nil {
			return l
		}
	}
	return nil
}

// tickets returns the live tickets of g's line, oldest first.
func (gs *groupSlots) tickets(ctx context.Context, g job.Group) ([]string, error) {
	kv, err := gs.js.KeyValue(ctx, gs.locker.Options().Bucket)
	if err != nil {
		return nil, err
	}
	lister, err := kv.ListKeysFiltered(ctx, ticketPrefix(g.Name)+">")
	if err != nil {
		return nil, err
	}
	var out []string
	for k := range lister.Keys() {
		if _, err := gs.locker.Holder(ctx, k); err == nil {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out, nil
}

// waiting reports whether a live ticket other than mine is in g's line.
func (gs *groupSlots) waiting(ctx context.Context, g job.Group, mine string) bool {
	ts, err := gs.tickets(ctx, g)
	return err == nil && slices.ContainsFunc(ts, func(k string) bool { return k != mine })
}

// first reports whether mine is the oldest live ticket of g's line (true
// too when the line cannot be read: a slot still bounds the runs).
func (gs *groupSlots) first(ctx context.Context, g job.Group, mine string) bool {
	ts, err := gs.tickets(ctx, g)
	return err != nil || len(ts) == 0 || ts[0] == mine || !strings.HasPrefix(ts[0], ticketPrefix(g.Name))
}

// release frees a slot or a ticket, with the lock's bounded wait.
func (gs *groupSlots) release(l *lock.Lease) {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	_ = l.Release(ctx)
}

// runInGroup runs the claimed run under lease (see execute), first taking
// a slot of the job's concurrency group if it has one, and holding it
// until the result: a lost slot stops the run as a lost lease does. A run
// that gets no slot is recorded missed with reason group_full (cancelled
// if the scheduler is shutting down). run is the run as recorded.
func (s *Scheduler) runInGroup(parent context.Context, e *entry, run *Run, lease *heldLock, log zerolog.Logger) {
	g := e.job.Group
	if g.Name == "" {
		s.execute(parent, e, run, lease, log)
		return
	}
	until := run.Tick.Add(e.job.StartingDeadline)
	if run.Manual {
		until = run.Start.Add(e.job.StartingDeadline)
	}
	// A cancel request, or the lease's loss, ends the wait too.
	wctx, stopWait := context.WithCancel(parent)
	unhook := context.AfterFunc(lease.Cancelled(), stopWait)
	slot, err := s.groups.waitSlot(wctx, g, run.Tick, until)
	unhook()
	stopWait()
	if err != nil {
		s.noSlot(e, run, lease, err, log)
		return
	}
	defer s.groups.release(slot)
	lease.boundBy(slot)
	run.Start = s.now() // the run starts now; its claim, before the wait, recorded the claim's time
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	stop := context.AfterFunc(slot.Context(), func() {
		if errors.Is(slot.Err(), lock.ErrLeaseLost) {
			log.Warn().Str("group", g.Name).Msg("the run's slot of its concurrency group was lost: stopping the run")
			cancel(lock.ErrLeaseLost)
		}
	})
	defer stop()
	s.execute(ctx, e, run, lease, log)
}

// noSlot records a claimed run that got no slot of its group.
func (s *Scheduler) noSlot(e *entry, run *Run, lease *heldLock, err error, log zerolog.Logger) {
	g := e.job.Group
	run.End = s.now()
	var ce *CancelledError
	switch {
	case errors.As(context.Cause(lease.Cancelled()), &ce):
		run.Status, run.By, run.Reason, run.Error = StatusCancelled, ce.By, ce.Reason, ce.Error()+" while waiting for a slot of group "+g.Name
		log.Info().Str("group", g.Name).Str("by", ce.By).Msg("run cancelled while waiting for a slot of its concurrency group")
	case errors.Is(context.Cause(lease.Context()), lock.ErrLeaseLost):
		run.Status, run.Error = StatusLost, "the job's lock was lost while waiting for a slot of group "+g.Name
		s.m.leaseLost(run.Job)
	case errors.Is(err, errGroupFull):
		run.Status, run.Reason, run.Ticks = StatusMissed, ReasonGroupFull, 1
		run.Error = fmt.Sprintf("group %s was full (max_running %d) until the tick's starting deadline", g.Name, g.MaxRunning)
		s.m.missed.WithLabelValues(run.Job, string(ReasonGroupFull)).Inc()
		log.Warn().Str("group", g.Name).Int("max_running", g.MaxRunning).Msg("tick missed: its concurrency group was full")
	default:
		run.Status, run.Error = StatusCancelled, "not started: "+err.Error()
		log.Warn().Err(err).Str("group", g.Name).Msg("run not started: no slot of its concurrency group")
	}
	lease.settle()
	recorded, _ := s.recordResult(*run, nil, lease, log)
	*run = recorded
	s.result(recorded)
}
