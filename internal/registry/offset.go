package registry

import (
	"slices"
	"sync"
	"time"
)

// Clock offset: ticks follow the NATS server's clock, not the replica's.
// JetStream stamps every stored message with the server's time; the
// replica's own announcements (see Registry) come back on its watch with
// that stamp, so each one is a sample: server stamp − the midpoint of the
// local send and acknowledgement times, accurate to half the round trip.
const (
	offsetSamples = 8             // the estimate uses the best of the last samples
	maxSampleRTT  = time.Second   // a slower round trip says little
	MaxOffset     = 1 * time.Hour // a larger estimate is clamped (and logged)
)

type offsetSample struct{ offset, rtt time.Duration }

// OffsetEstimate smooths samples: of the last offsetSamples, the one with
// the shortest round trip wins (the least queueing), and the estimate is
// its offset minus half its round trip, so a replica never believes the
// server's clock later than it can be: runs start at or after their tick
// by the server's clock, by at most about a round trip. The zero value
// has no estimate; a nil one never has (a scheduler on its own clock).
type OffsetEstimate struct {
	mu      sync.Mutex
	samples []offsetSample
	est     time.Duration
	known   bool
}

// Add records a sample and reports the new estimate.
func (o *OffsetEstimate) Add(offset, rtt time.Duration) (time.Duration, bool) {
	if rtt < 0 || rtt > maxSampleRTT {
		return o.Get()
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.samples = append(o.samples, offsetSample{offset, rtt})
	if len(o.samples) > offsetSamples {
		o.samples = o.samples[1:]
	}
	best := slices.MinFunc(o.samples, func(a, b offsetSample) int { return int(a.rtt - b.rtt) })
	o.est = min(max(best.offset-best.rtt/2, -MaxOffset), MaxOffset)
	o.known = true
	return o.est, true
}

// Get returns the estimate and whether there is one (0 before the first
// sample, and always for a nil estimate: a scheduler on its own clock,
// scheduler.Options.LocalClock).
func (o *OffsetEstimate) Get() (time.Duration, bool) {
	if o == nil {
		return 0, false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.est, o.known
}
