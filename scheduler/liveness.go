package scheduler

import (
	"sync"
	"time"
)

// Liveness. A replica is live while its last announcement is younger than
// ReplicaTTL by the NATS server's clock. The bucket's word is not enough:
// the server expires an announcement by its TTL, but a server restarted
// after a crash can serve a dead replica's announcement long after its TTL
// (it recovered the message but not its expiry). Every reader applies the
// same rule to the announcement's JetStream timestamp: ListReplicas (the
// CLI, the page and the API) and the load spreading (registry.live).
//
// Ages are measured on the server's clock, not the local one: the stamps
// are the server's, and a host whose clock is off by more than the TTL
// would otherwise call every replica dead, or a dead one live.

// replicaLive reports whether a replica whose last announcement was
// stored at seen (server clock) is live at serverNow (server clock).
func replicaLive(seen, serverNow time.Time) bool {
	return serverNow.Sub(seen) < ReplicaTTL
}

// serverClock follows the NATS server's clock from a reading of it (a
// JetStream timestamp) and the local time the reading arrived, advanced by
// the local monotonic clock since: real time, whatever Options.Clock is,
// as TTLs expire in real time. It is behind the server by the reading's
// delivery delay (milliseconds), which errs on the side of live.
type serverClock struct {
	mu    sync.Mutex
	stamp time.Time // a server timestamp
	at    time.Time // local time when it arrived, with its monotonic reading
}

// set records a reading: the server's clock was stamp when at arrived.
func (c *serverClock) set(stamp, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stamp, c.at = stamp, at
}

// now is the server's time, estimated; without a reading (or with a zero
// one: a server that reports no time), the local clock stands in.
func (c *serverClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stamp.IsZero() {
		return time.Now()
	}
	return c.stamp.Add(time.Since(c.at))
}
