package scheduler

import (
	"time"

	"github.com/cronlock/cronlock/internal/registry"
)

// Clock offset: ticks follow the NATS server's clock, not the replica's.
// The replica registry estimates the offset from the replica's own
// announcements (registry.OffsetEstimate); the scheduler adds it to its
// clock.
const (
	maxOffset  = registry.MaxOffset // an estimate at the clamp is not trusted (serverNow)
	offsetWarn = 1 * time.Second    // beyond this the replica warns and sets the gauge
)

// now is the time by the NATS server's clock, as estimated.
func (s *Scheduler) now() time.Time {
	d, _ := s.offset.Get()
	return s.clock.Now().Add(d)
}
