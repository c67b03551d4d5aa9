package scheduler

import (
	"slices"
	"sync"
	"time"
)

// Clock offset: ticks follow the NATS server's clock, not the replica's.
// JetStream stamps every stored message with the server's time; the
// replica's own announcements (see registry) come back on its watch with
// that stamp, so each one is a sample: server stamp − the midpoint of the
// local send and acknowledgement times, accurate to half the round trip.
const (
	offsetSamples = 8               // the estimate uses the best of the last samples
	maxSampleRTT  = time.Second     // a slower round trip says little
	maxOffset     = 1 * time.Hour   // a larger estimate is clamped (and logged)
	offsetWarn    = 1 * time.Second // beyond this the replica warns and sets the gauge
)

type offsetSample struct{ offset, rtt time.Duration }

// offsetEstimate smooths samples: of the last offsetSamples, the one with
// the shortest round trip wins (the least queueing), and the estimate is
// its offset minus half its round trip, so a replica never believes the
// server's clock later than it can be: runs start at or after their tick
// by the server's clock, by at most about a round trip.
type offsetEstimate struct {
	mu      sync.Mutex
	samples []offsetSample
	est     time.Duration
	known   bool
}

// add records a sample and reports the new estimate.
func (o *offsetEstimate) add(offset, rtt time.Duration) (time.Duration, bool) {
	if rtt < 0 || rtt > maxSampleRTT {
		return o.get()
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.samples = append(o.samples, offsetSample{offset, rtt})
	if len(o.samples) > offsetSamples {
		o.samples = o.samples[1:]
	}
	best := slices.MinFunc(o.samples, func(a, b offsetSample) int { return int(a.rtt - b.rtt) })
	o.est = min(max(best.offset-best.rtt/2, -maxOffset), maxOffset)
	o.known = true
	return o.est, true
}

// get returns the estimate and whether there is one (0 before the first
// sample, and always for a nil estimate: Options.LocalClock).
func (o *offsetEstimate) get() (time.Duration, bool) {
	if o == nil {
		return 0, false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.est, o.known
}

// now is the time by the NATS server's clock, as estimated.
func (s *Scheduler) now() time.Time {
	d, _ := s.offset.get()
	return s.clock.Now().Add(d)
}
