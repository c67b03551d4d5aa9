package registry

import (
	"sync"
	"time"
)

// Liveness. A replica is live while its last announcement is younger than
// TTL by the NATS server's clock. The bucket's word is not enough: the
// server expires an announcement by its TTL, but a server restarted after
// a crash can serve a dead replica's announcement long after its TTL (it
// recovered the message but not its expiry). Every reader applies the same
// rule to the announcement's JetStream timestamp: List (the CLI, the page
// and the API), Registry.Lookup (abandoned runs) and the load spreading
// (Registry.Live).
//
// Ages are measured on the server's clock, not the local one: the stamps
// are the server's, and a host whose clock is off by more than the TTL
// would otherwise call every replica dead, or a dead one live.

// Live reports whether a replica whose last announcement was stored at
// seen (server clock) is live at serverNow (server clock).
func Live(seen, serverNow time.Time) bool {
	return serverNow.Sub(seen) < TTL
}

// ServerClock follows the NATS server's clock from a reading of it (a
// JetStream timestamp) and the local time the reading arrived, advanced by
// the local monotonic clock since: real time, whatever clock the scheduler
// runs on, as TTLs expire in real time. It is behind the server by the
// reading's delivery delay (milliseconds), which errs on the side of live.
// The zero value has no reading.
type ServerClock struct {
	mu    sync.Mutex
	stamp time.Time // a server timestamp
	at    time.Time // local time when it arrived, with its monotonic reading
}

// Set records a reading: the server's clock was stamp when at arrived.
func (c *ServerClock) Set(stamp, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stamp, c.at = stamp, at
}

// Now is the server's time, estimated; without a reading (or with a zero
// one: a server that reports no time), the local clock stands in.
func (c *ServerClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stamp.IsZero() {
		return time.Now()
	}
	return c.stamp.Add(time.Since(c.at))
}
