package scheduler

import (
	"errors"
	"time"

	"github.com/cronlock/cronlock/lock"
)

// Each replica remembers the ticks at which it tried a job's lock and
// found it held, since its last claim of the job: the claim records those
// of them that no live run explains as missed with reason lock_held (a
// holder that died keeps the lock until its lease ends), not as if no
// replica had been there.

// heldTicks is a span of ticks at which this replica tried the job's lock
// and found it held (zero: none since its last claim).
type heldTicks struct {
	from, through time.Time
	holder        string // the last holder seen ("" if unknown)
}

// covers reports whether t lies within the span.
func (h heldTicks) covers(t time.Time) bool {
	return !h.from.IsZero() && !t.Before(h.from) && !t.After(h.through)
}

// noteHeld records that the job's lock was found held at tick.
func (e *entry) noteHeld(tick time.Time, err error) {
	if tick.IsZero() {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.held == nil {
		e.held = &heldTicks{}
	}
	if e.held.from.IsZero() || tick.Before(e.held.from) {
		e.held.from = tick
	}
	if tick.After(e.held.through) {
		e.held.through = tick
	}
	var na *lock.NotAcquiredError
	if errors.As(err, &na) && na.Holder.Owner != "" {
		e.held.holder = na.Holder.Owner
	}
}

// heldSince returns the ticks at which the lock was found held since the
// last claim.
func (e *entry) heldSince() heldTicks {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.held == nil {
		return heldTicks{}
	}
	return *e.held
}

// clearHeld forgets the held ticks up to a claimed tick.
func (e *entry) clearHeld(claimed time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.held != nil && !e.held.through.After(claimed) {
		e.held = nil
	}
}
