package scheduler

import "time"

// Bounds on the scheduler's own NATS calls. None is a setting: each is
// derived from AcquireTimeout or sized for a round trip to a healthy server
// with room for a slow one, and a call that runs out is handled like NATS
// failing (the tick is an outage, the lock frees at its lease).
const (
	// stateTimeoutFactor: a read or compare-and-swap of a job's shared
	// state (claim, result, skip, rerun claim, catch-up repair, sweep) may take
	// this many AcquireTimeouts. A claim is a read and a compare-and-swap,
	// retried when another replica's write came first; four leave room for
	// two such conflicts on a slow server, while a NATS that does not
	// answer still ends the tick within 2 s with the default 500 ms.
	stateTimeoutFactor = 4
	// releaseTimeout bounds freeing a lease after a run. Every replica
	// waiting for the job's next tick waits for it, but giving up early
	// costs more (the lock is then free only at the lease's end), so it is
	// generous; the lock retries a release NATS did not take.
	releaseTimeout = 5 * time.Second
	// clockWait is how long Run waits for the first estimate of the NATS
	// server's clock offset (a round trip of the announcement) before it
	// schedules on this host's clock.
	clockWait = 2 * time.Second
)

// stateTimeout bounds one access to a job's shared state: see
// stateTimeoutFactor.
func (s *Scheduler) stateTimeout() time.Duration {
	return s.opts.AcquireTimeout * stateTimeoutFactor
}
