package job

// NeverFires reports whether s has no tick at any time: no calendar date
// matches its month and day fields together, as in "0 0 30 2 *" or
// "0 0 31 4,6,9,11 *". Such a spec parses, but a job with it would never
// run, which is almost certainly a mistake; Job.Validate and cronlock's
// configuration check reject it.
//
// The answer is structural, not a search from some instant, so it does not
// depend on when it is asked: "0 0 29 2 *" fires (every leap year) even
// though Next, which looks about five years ahead, returns the zero time
// when asked between 2096-02-29 and the end of 2098. Schedules of other
// types, including "@every D", always fire. Of a Job's ParsedSchedule: a
// union of specs never fires when none of them does; excluded dates and
// a StartAt/EndAt window do not change the answer.
func NeverFires(s Schedule) bool {
	if never, known := neverFiresCalendar(s); known {
		return never
	}
	spec, ok := s.(*specSchedule)
	if !ok {
		return false
	}
	return !spec.f.someDate()
}

// leapYear is a year with a February 29, for daysIn: the widest month
// lengths.
const leapYear = 2000

// someDate reports whether some calendar date matches the month and day
// fields. Over the 400-year Gregorian cycle every date of every month,
// February 29 included, falls on each of the seven weekdays, so it suffices
// to try each allowed month, each day it can have and each weekday. The
// hour, minute and second fields always allow at least one value. With the
// Quartz forms (L, W, #) a day's match depends on its whole month: then it
// tries each length the month can have and each weekday of its 1st, which
// every month also has over the cycle.
func (f *fields) someDate() bool {
	for m := int64(1); m <= 12; m++ {
		if f.month&(1<<uint(m)) == 0 {
			continue
		}
		if f.rules != nil {
			if f.someQuartzDate(m) {
				return true
			}
			continue
		}
		for d := int64(1); d <= daysIn(leapYear, m); d++ {
			for wd := int64(0); wd < 7; wd++ {
				if f.dayMatches(d, wd, 0, 0) {
					return true
				}
			}
		}
	}
	return false
}

// someQuartzDate is someDate for month m of a spec with Quartz forms.
func (f *fields) someQuartzDate(m int64) bool {
	lengths := []int64{daysIn(leapYear, m)}
	if m == 2 {
		lengths = append(lengths, daysIn(leapYear+1, m))
	}
	for _, dim := range lengths {
		for wd1 := int64(0); wd1 < 7; wd1++ {
			qdom, qdow := f.rules.month(dim, wd1)
			for d := int64(1); d <= dim; d++ {
				if f.dayMatches(d, (wd1+d-1)%7, qdom, qdow) {
					return true
				}
			}
		}
	}
	return false
}

// neverFiresCalendar is NeverFires for the schedules built by
// Job.ParsedSchedule: a union never fires when none of its parts does; the
// excluded dates and the window keep their base's answer (a window in the
// past is valid: the job has ended).
func neverFiresCalendar(s Schedule) (never, known bool) {
	switch s := s.(type) {
	case unionSchedule:
		for _, p := range s.parts {
			if !NeverFires(p) {
				return false, true
			}
		}
		return true, true
	case excludeSchedule:
		return NeverFires(s.base), true
	case windowSchedule:
		return NeverFires(s.base), true
	}
	return false, false
}
