package job

// Proleptic Gregorian calendar arithmetic on plain integers.
//
// Schedules search wall-clock time as "naive" seconds: the seconds since
// 1970-01-01T00:00:00 of a clock that has no time zone and no DST. Doing the
// calendar arithmetic on integers instead of time.Date keeps Next cheap (it
// runs for every job every second) and makes the wall-clock search immune to
// the zone's transitions by construction; transitions are handled separately,
// in one place (spec.go).

const secondsPerDay = 86400

// floorDiv returns ⌊a/b⌋ for b > 0, also for negative a.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

// daysFromCivil returns the number of days from 1970-01-01 to y-m-d, where
// m is 1..12 and d is 1..31 (Howard Hinnant's algorithm).
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := floorDiv(y, 400)
	yoe := y - era*400 // [0, 399]
	mp := (m + 9) % 12 // March = 0
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy // [0, 146096]
	return era*146097 + doe - 719468
}

// civilFromDays is the inverse of daysFromCivil.
func civilFromDays(z int64) (y, m, d int64) {
	z += 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	if mp < 10 {
		m = mp + 3
	} else {
		m = mp - 9
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

// weekday returns the day of the week of a day number, 0 = Sunday, as cron
// numbers them. 1970-01-01 was a Thursday.
func weekday(days int64) int64 {
	w := (days + 4) % 7
	if w < 0 {
		w += 7
	}
	return w
}

// daysIn returns the number of days in month m of year y.
func daysIn(y, m int64) int64 {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	default:
		return 31
	}
}
