package job

import (
	"time"
)

// specSchedule is a cron spec evaluated on the wall clock of loc, with the
// DST rules described in the package documentation.
type specSchedule struct {
	f   fields
	loc *time.Location
	// realTime: the hour field matches every hour, so the schedule follows
	// real time across transitions instead of the wall-clock rules.
	realTime bool
}

// searchYears bounds the search: Next gives up (returns the zero time) when
// no tick has a wall-clock date before January 1 of year(t)+searchYears+1.
// Five full years contain a leap day, so "0 0 29 2 *" always finds one.
const searchYears = 5

// Supported range of t: outside it Next returns the zero time. It keeps the
// integer arithmetic far from overflow; cron ticks before year 1 or after
// 9990 have no use.
var (
	minUnix = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	maxUnix = time.Date(9990, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
)

// maxSegments bounds the walk over zone transitions as a last resort; real
// zones have at most a handful of transitions per year.
const maxSegments = 1000

// Next returns the first tick strictly after t, in the schedule's location.
//
// It walks the zone's segments (maximal intervals of constant UTC offset,
// from time.Time.ZoneBounds) starting with the one containing the first
// whole second after t. Inside a segment, wall clock and instant differ by a
// constant, so the first matching wall time is found by the integer search
// of fields.nextWall and shifted back by the offset. If it falls beyond the
// segment, the search resumes at the next segment. The DST rules enter at
// the start of a segment only:
//   - after a forward jump (a gap), a fixed-hour schedule with a match among
//     the skipped wall times ticks once at the segment's first instant;
//   - after a backward jump (an overlap), a fixed-hour schedule skips the
//     wall times it already had in the previous segment.
func (s *specSchedule) Next(t time.Time) time.Time {
	sec := t.Unix()
	if sec < minUnix || sec > maxUnix {
		return time.Time{}
	}
	u := sec + 1 // the first whole second strictly after t
	at := time.Unix(u, 0).In(s.loc)
	lastYear := int64(at.Year()) + searchYears
	for range maxSegments {
		_, off := at.Zone()
		start, end := at.ZoneBounds()
		offset := int64(off)
		prevOffset := offset
		var startU int64
		if !start.IsZero() {
			startU = start.Unix()
			_, po := start.Add(-time.Second).Zone()
			prevOffset = int64(po)
		}
		lo := u + offset // naive wall clock of u
		if !s.realTime && !start.IsZero() {
			switch {
			case prevOffset < offset && u == startU:
				// Gap: wall times [startU+prevOffset, startU+offset) were
				// skipped; one of them matching ticks once, now.
				if w, ok := s.f.nextWall(startU+prevOffset, lastYear); ok && w < startU+offset {
					return at
				}
			case prevOffset > offset:
				// Overlap: wall times before startU+prevOffset occurred in
				// the previous segment already; they ran there.
				lo = max(lo, startU+prevOffset)
			}
		}
		w, ok := s.f.nextWall(lo, lastYear)
		if !ok {
			return time.Time{}
		}
		if end.IsZero() || w-offset < end.Unix() {
			return time.Unix(w-offset, 0).In(s.loc)
		}
		u, at = end.Unix(), end // ZoneBounds returns end in s.loc
	}
	return time.Time{}
}
