package job

import (
	"math"
	"time"
)

// everySchedule is "@every D": the instants k·D after the Unix epoch, for
// integer k.
//
// robfig/cron's ConstantDelaySchedule instead returns "t + D", relative to
// whenever it is asked, so two replicas (or one replica before and after a
// restart) would disagree on the ticks and the lock could not make a tick
// run exactly once. Anchoring to the epoch makes every process compute the
// same ticks from the spec alone. The period is a whole number of seconds
// (ParseSchedule enforces it), so the ticks fall on whole seconds; they are
// independent of time zones and DST.
type everySchedule struct {
	period int64 // seconds, >= 1
}

// Next returns the first multiple of the period strictly after t, in UTC.
// It returns the zero time only if that multiple does not fit in an int64
// count of seconds.
func (e everySchedule) Next(t time.Time) time.Time {
	s := t.Unix() // ⌊t⌋: the fraction of a second is in [0, 1s)
	if s > math.MaxInt64-e.period {
		return time.Time{}
	}
	// (⌊s/p⌋+1)·p lies in (s, s+p], so it is > t and does not overflow.
	return time.Unix((floorDiv(s, e.period)+1)*e.period, 0).UTC()
}
