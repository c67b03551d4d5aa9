package scheduler

// followRecord ends the hold as soon as the watch of the history delivers
// a write of the job's record that no longer holds this lease (cronlock
// unlock --force, History.ForceRelease): within a watch delivery, not at
// the next renewal. Mutual exclusion does not depend on it (a renewal that
// finds the record taken ends the hold too); without the watch it waits
// for the hold's end. It returns when the hold ends or settles.
//
// Only a delivery after the one of this hold's own write counts: the view
// before it is of an older revision. A run's result frees the hold after
// settle, so its delivery finds the hold settled and is not a loss.
//
// It also cancels the run when a delivery carries a cancel request for this
// lease (see cancel.go).
func (l *heldLock) followRecord() {
	seen := false // the watch has delivered a write holding this lease
	asked := false
	for {
		changed := l.s.claims.onChange(l.name)
		switch holder, cancel := l.s.claims.holderOf(l.name); {
		case holder == l.id:
			seen = true
			if cancel == l.id && !asked {
				asked = true
				l.cancelOnRequest()
			}
		case seen:
			select {
			case <-l.stop: // the run ended: its result freed the hold
			default:
				l.lose("the job's record no longer holds this lease (released by force or taken over)")
			}
			return
		}
		select {
		case <-l.stop:
			return
		case <-l.ctx.Done():
			return
		case <-changed:
		}
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

// cancelOnRequest cancels the run as the record's cancel request for this
// lease asks (who asked is read from the record).
func (l *heldLock) cancelOnRequest() {
	ce := l.s.requestedCancel(l.name, l.id)
	l.s.log.Info().Str("job", l.name).Str("owner", l.owner).Uint64("token", l.token).Str("by", ce.By).
		Str("reason", string(ce.Reason)).Msg("run cancelled on request")
	l.cancelSoon(ce)
}
