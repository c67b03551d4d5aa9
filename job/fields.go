package job

import (
	"math/bits"

	"github.com/robfig/cron/v3"
)

// starBit is the bit robfig/cron sets in a field parsed from "*" or "?".
const starBit = 1 << 63

// fields is a parsed cron spec as bit sets, one bit per allowed value, taken
// from robfig/cron's SpecSchedule. It only matches wall-clock times; how wall
// times map to instants is specSchedule's business.
type fields struct {
	second, minute, hour, dom, month, dow uint64
	// domStar and dowStar record robfig/cron's star bit in the day fields
	// ("*", "?", "*/1"; not "*/2"). When both day fields are restricted a
	// day matches if EITHER matches; otherwise both must. Vixie cron
	// decides by a leading '*' instead; see the package documentation.
	domStar, dowStar bool
	// rules holds the Quartz forms of the day fields (L, W, #); nil if
	// the spec has none. Their days add to dom's and dow's.
	rules *dayRules
}

func fieldsOf(s *cron.SpecSchedule) fields {
	return fields{
		second:  s.Second &^ starBit,
		minute:  s.Minute &^ starBit,
		hour:    s.Hour &^ starBit,
		dom:     s.Dom &^ starBit,
		month:   s.Month &^ starBit,
		dow:     s.Dow &^ starBit,
		domStar: s.Dom&starBit != 0,
		dowStar: s.Dow&starBit != 0,
	}
}

// allHours is the hour field of a schedule that runs in every hour.
const allHours = 1<<24 - 1

// everyHour reports whether the hour field matches all 24 hours, whatever
// its spelling ("*", "0-23", a descriptor such as @hourly, or a 5- or 6-field
// spec that leaves the hour as "*"). Such schedules follow real time across
// DST transitions; see the package documentation.
func (f *fields) everyHour() bool { return f.hour&allHours == allHours }

// nextBit returns the smallest v in [from, max] whose bit is set in mask.
func nextBit(mask uint64, from, max int64) (int64, bool) {
	if from > max {
		return 0, false
	}
	m := mask >> uint(from) << uint(from) // clear bits below from
	m &= 1<<uint(max+1) - 1               // and above max
	if m == 0 {
		return 0, false
	}
	return int64(bits.TrailingZeros64(m)), true
}

// dayMatches reports whether day d, a weekday wd, matches the day fields;
// qdom and qdow are the days of its month that the Quartz forms match
// (f.rules.month), zero without them.
func (f *fields) dayMatches(d, wd int64, qdom, qdow uint64) bool {
	domMatch := f.dom&(1<<uint(d)) != 0 || qdom&(1<<uint(d)) != 0
	dowMatch := f.dow&(1<<uint(wd)) != 0 || qdow&(1<<uint(d)) != 0
	if f.domStar || f.dowStar {
		return domMatch && dowMatch
	}
	return domMatch || dowMatch
}

// nextWall returns the first naive wall-clock second w >= from (see civil.go)
// whose fields match, or false if there is none in a year up to lastYear.
//
// It walks the fields from the largest down, jumping to the next set bit
// of each (and resetting the smaller fields) instead of stepping second by
// second, so a search costs a few dozen integer operations, and a spec that
// never matches ("0 0 30 2 *") gives up after about 12 steps per year.
func (f *fields) nextWall(from, lastYear int64) (int64, bool) {
	days := floorDiv(from, secondsPerDay)
	sod := from - days*secondsPerDay
	y, mo, d := civilFromDays(days)
	h, mi, s := sod/3600, sod/60%60, sod%60
	for y <= lastYear {
		// Month.
		m, ok := nextBit(f.month, mo, 12)
		if !ok {
			y, mo, d, h, mi, s = y+1, 1, 1, 0, 0, 0
			continue
		}
		if m != mo {
			mo, d, h, mi, s = m, 1, 0, 0, 0
		}
		// Day: at most 31 candidates, with the weekday carried along.
		dim := daysIn(y, mo)
		found := int64(0)
		if d <= dim {
			wd := weekday(daysFromCivil(y, mo, d))
			var qdom, qdow uint64
			if f.rules != nil {
				qdom, qdow = f.rules.month(dim, (wd-(d-1)%7+7)%7)
			}
			for dd := d; dd <= dim; dd++ {
				if f.dayMatches(dd, wd, qdom, qdow) {
					found = dd
					break
				}
				wd = (wd + 1) % 7
			}
		}
		if found == 0 {
			mo, d, h, mi, s = mo+1, 1, 0, 0, 0
			if mo > 12 {
				y, mo = y+1, 1
			}
			continue
		}
		if found != d {
			d, h, mi, s = found, 0, 0, 0
		}
		// Hour, minute, second: overflow moves the next larger field on.
		hh, ok := nextBit(f.hour, h, 23)
		if !ok {
			d, h, mi, s = d+1, 0, 0, 0
			continue
		}
		if hh != h {
			h, mi, s = hh, 0, 0
		}
		mm, ok := nextBit(f.minute, mi, 59)
		if !ok {
			h, mi, s = h+1, 0, 0
			continue
		}
		if mm != mi {
			mi, s = mm, 0
		}
		ss, ok := nextBit(f.second, s, 59)
		if !ok {
			mi, s = mi+1, 0
			continue
		}
		return daysFromCivil(y, mo, d)*secondsPerDay + h*3600 + mm*60 + ss, true
	}
	return 0, false
}
