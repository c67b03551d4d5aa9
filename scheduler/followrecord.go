package scheduler

// Following the record of a hold. A hold ends as soon as the watch of the
// history delivers a write of the job's record that no longer holds its
// lease (cronlock unlock --force, History.ForceRelease): within a watch
// delivery, not at the next renewal. Mutual exclusion does not depend on
// it (a renewal that finds the record taken ends the hold too); without
// the watch the hold waits for its end.
//
// Only a delivery after the one of the hold's own write counts: the view
// before it is of an older revision. A run's result frees the hold after
// settle, so its delivery finds the hold settled and is not a loss.
//
// A delivery carrying a cancel request for the hold's lease cancels its
// run (see cancel.go).
//
// The watch calls the hold at each delivery of its record (claims.listen)
// rather than a goroutine per hold waiting for one: a run costs no
// goroutine for it, and a delivery wakes nothing.

// recordListener hears of each delivery of a job's record, from the
// watch's goroutine: it must not block. Deliveries from the followers of
// two follow sets (while they are replaced) may come concurrently and out
// of order, so a listener reads the view it needs from claims, which
// keeps the latest.
type recordListener interface {
	delivered()
}

// followRecord starts following the hold's record, until settle or the
// hold's end.
func (l *heldLock) followRecord() {
	l.s.claims.listen(l.name, l)
	l.delivered() // what the watch has delivered already
}

// delivered looks at the record's latest view: a loss of the hold, or a
// cancel request for it. A parallel run's record holds no lease of it
// (parallel.go): only a cancel request counts there.
//
// The view is read under followMu: read before it, a view from before the
// hold's own write could be judged after a later delivery had seen that
// write (seenOwn), and the hold was lost at its start. Under load (20,000
// jobs due at once on 3 replicas) that lost a few ticks in every burst,
// recorded as lost and run by no one.
func (l *heldLock) delivered() {
	l.followMu.Lock()
	defer l.followMu.Unlock()
	holder, cancel := l.s.claims.holderOf(l.name)
	if l.unfollowed {
		return
	}
	if l.ctx.Err() != nil {
		l.unfollowLocked()
		return
	}
	if l.slot == nil {
		if holder != l.id {
			if l.seenOwn {
				select {
				case <-l.stop: // the run ended: its result freed the hold
				default:
					l.lose("the job's record no longer holds this lease (released by force or taken over)")
				}
				l.unfollowLocked()
			}
			return
		}
		l.seenOwn = true
	}
	if cancel == l.id && !l.askedCancel {
		l.askedCancel = true
		go l.cancelOnRequest() // reads the record: not on the watch's goroutine
	}
}

// unfollowRecord stops following the hold's record (settle).
func (l *heldLock) unfollowRecord() {
	l.followMu.Lock()
	defer l.followMu.Unlock()
	l.unfollowLocked()
}

func (l *heldLock) unfollowLocked() {
	if !l.unfollowed {
		l.unfollowed = true
		l.s.claims.unlisten(l.name, l)
	}
}

// holderOf is the lease holding the job's lock as the watch delivered it
// last ("" free or not delivered), and the lease a cancel request is for.
func (c *claims) holderOf(name string) (holder, cancel string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := c.views[name]
	return v.holder, v.cancel
}

// listen calls r at each delivery of the job's record until unlisten.
func (c *claims) listen(name string, r recordListener) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.listeners == nil {
		c.listeners = map[string][]recordListener{}
	}
	c.listeners[name] = append(c.listeners[name], r)
}

// unlisten stops calling r at the deliveries of the job's record.
func (c *claims) unlisten(name string, r recordListener) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rs := c.listeners[name]
	for i, x := range rs {
		if x == r {
			rs = append(rs[:i], rs[i+1:]...)
			break
		}
	}
	if len(rs) == 0 {
		delete(c.listeners, name)
	} else {
		c.listeners[name] = rs
	}
}

// cancelOnRequest cancels the run as the record's cancel request for this
// lease asks (who asked is read from the record).
func (l *heldLock) cancelOnRequest() {
	ce := l.s.requestedCancel(l.name, l.id)
	l.s.log.Info().Str("job", l.name).Str("owner", l.owner).Uint64("token", l.token).Str("by", ce.By).
		Str("reason", string(ce.Reason)).Msg("run cancelled on request")
	l.cancelSoon(ce)
}
