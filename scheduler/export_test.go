package scheduler

// SetClaimsInFlight sets how many claims s sends at a time (0: no bound),
// so that a test can make a burst larger than the bound without thousands
// of jobs. Call it before Run.
func SetClaimsInFlight(s *Scheduler, n int) { s.gate = newClaimGate(n) }
