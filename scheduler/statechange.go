package scheduler

// stateChanged applies what the watch tells of a job's shared state: the
// last success and failure for the gauges (on every replica, so an alert
// on "no success for X" survives a full rollout), a rerun on offer, and the
// runs in progress (for the sweep, sweep.go).
func (s *Scheduler) stateChanged(name string, v view) {
	s.orphans.note(name, v.runningOn)
	if e, ok := s.lookup(name); ok {
		s.definitionChanged(e, v)
	}
	s.m.state.set(name, v.lastSuccess, v.lastFailure)
	if v.backfill && v.holder == "" {
		if e, ok := s.lookup(name); ok {
			s.offer(e, offerBackfill)
		}
	}
	if !v.queued.IsZero() && v.holder == "" && v.queued.After(v.lastTick) {
		if e, ok := s.lookup(name); ok {
			s.offer(e, offerQueued)
		}
	}
	if v.rerun.IsZero() {
		return
	}
	if e, ok := s.lookup(name); ok {
		s.offer(e, offerRerun)
	}
}

// suspended reports whether the job's ticks must not start: by its own
// setting, or suspended by an operator.
func (s *Scheduler) suspended(e *entry) bool {
	if name, ok := RecordJob(e.job.Name); ok && s.claims.suspended(name) {
		return true // an every_replica job: suspended for every replica in the job's own record
	}
	return e.job.Suspended || s.claims.suspended(e.job.Name)
}
