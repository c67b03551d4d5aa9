package job

import (
	"fmt"
	"testing"
	"time"
)

// utc is shorthand for an instant in the tables below.
func utc(month time.Month, day, hour, min, sec int) time.Time {
	return time.Date(2026, month, day, hour, min, sec, 0, time.UTC)
}

// 2026 transitions used below:
//
//	Europe/Berlin     spring 03-29 01:00Z: 02:00 CET  -> 03:00 CEST (02:xx does not exist)
//	                  fall   10-25 01:00Z: 03:00 CEST -> 02:00 CET  (02:xx occurs twice)
//	America/New_York  spring 03-08 07:00Z: 02:00 EST  -> 03:00 EDT (02:xx does not exist)
//	                  fall   11-01 06:00Z: 02:00 EDT  -> 01:00 EST (01:xx occurs twice)
func TestNextDST(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		spec string
		loc  string
		from time.Time
		want []time.Time // the next ticks, in order
	}{
		// Fixed hours, Berlin.
		{"nonexistent time runs once at the end of the gap", "30 2 * * *", "Europe/Berlin", utc(3, 28, 0, 0, 0),
			[]time.Time{utc(3, 28, 1, 30, 0), utc(3, 29, 1, 0, 0), utc(3, 30, 0, 30, 0)}},
		{"start of the gap runs at its end", "0 2 * * *", "Europe/Berlin", utc(3, 28, 12, 0, 0),
			[]time.Time{utc(3, 29, 1, 0, 0), utc(3, 30, 0, 0, 0)}},
		{"gap times and the gap's end are one tick", "0,30 2,3 * * *", "Europe/Berlin", utc(3, 28, 23, 0, 0),
			[]time.Time{utc(3, 29, 1, 0, 0), utc(3, 29, 1, 30, 0), utc(3, 30, 0, 0, 0)}},
		{"many gap times are one tick", "*/10 2 * * *", "Europe/Berlin", utc(3, 28, 23, 0, 0),
			[]time.Time{utc(3, 29, 1, 0, 0), utc(3, 30, 0, 0, 0), utc(3, 30, 0, 10, 0)}},
		{"repeated time runs at its first occurrence only", "30 2 * * *", "Europe/Berlin", utc(10, 24, 0, 0, 0),
			[]time.Time{utc(10, 24, 0, 30, 0), utc(10, 25, 0, 30, 0), utc(10, 26, 1, 30, 0)}},
		{"asking during the second pass skips it", "30 2 * * *", "Europe/Berlin", utc(10, 25, 1, 15, 0),
			[]time.Time{utc(10, 26, 1, 30, 0)}},
		{"repeated hour, every 10 minutes, first pass only", "*/10 2 * * *", "Europe/Berlin", utc(10, 24, 23, 0, 0),
			[]time.Time{
				utc(10, 25, 0, 0, 0), utc(10, 25, 0, 10, 0), utc(10, 25, 0, 20, 0),
				utc(10, 25, 0, 30, 0), utc(10, 25, 0, 40, 0), utc(10, 25, 0, 50, 0),
				utc(10, 26, 1, 0, 0),
			}},
		{"03:00 after the fall-back occurs once", "0 3 * * *", "Europe/Berlin", utc(10, 24, 12, 0, 0),
			[]time.Time{utc(10, 25, 2, 0, 0)}},
		{"03:00 at the end of the spring gap", "0 3 * * *", "Europe/Berlin", utc(3, 28, 12, 0, 0),
			[]time.Time{utc(3, 29, 1, 0, 0), utc(3, 30, 1, 0, 0)}},
		{"@daily: midnight unaffected", "@daily", "Europe/Berlin", utc(3, 28, 12, 0, 0),
			[]time.Time{utc(3, 28, 23, 0, 0), utc(3, 29, 22, 0, 0)}},
		{"every 2 hours is fixed hours", "0 */2 * * *", "Europe/Berlin", utc(3, 28, 22, 30, 0),
			[]time.Time{utc(3, 28, 23, 0, 0), utc(3, 29, 1, 0, 0), utc(3, 29, 2, 0, 0)}},
		{"every 2 hours, fall-back", "0 */2 * * *", "Europe/Berlin", utc(10, 24, 22, 30, 0),
			[]time.Time{utc(10, 25, 0, 0, 0), utc(10, 25, 3, 0, 0), utc(10, 25, 5, 0, 0)}},

		// Hour wildcard, Berlin: real time.
		{"hour wildcard skips the gap", "30 * * * *", "Europe/Berlin", utc(3, 28, 23, 45, 0),
			[]time.Time{utc(3, 29, 0, 30, 0), utc(3, 29, 1, 30, 0), utc(3, 29, 2, 30, 0)}},
		{"hour wildcard runs in both passes", "30 * * * *", "Europe/Berlin", utc(10, 24, 23, 45, 0),
			[]time.Time{utc(10, 25, 0, 30, 0), utc(10, 25, 1, 30, 0), utc(10, 25, 2, 30, 0)}},
		{"0-23 is a wildcard too", "30 0-23 * * *", "Europe/Berlin", utc(10, 24, 23, 45, 0),
			[]time.Time{utc(10, 25, 0, 30, 0), utc(10, 25, 1, 30, 0), utc(10, 25, 2, 30, 0)}},
		{"@hourly, spring", "@hourly", "Europe/Berlin", utc(3, 29, 0, 0, 0),
			[]time.Time{utc(3, 29, 1, 0, 0), utc(3, 29, 2, 0, 0)}},
		{"@hourly, fall", "@hourly", "Europe/Berlin", utc(10, 25, 0, 0, 0),
			[]time.Time{utc(10, 25, 1, 0, 0), utc(10, 25, 2, 0, 0)}},
		{"every 20 minutes, fall: real time, evenly spaced", "*/20 * * * *", "Europe/Berlin", utc(10, 25, 0, 30, 0),
			[]time.Time{utc(10, 25, 0, 40, 0), utc(10, 25, 1, 0, 0), utc(10, 25, 1, 20, 0), utc(10, 25, 1, 40, 0)}},
		{"every 20 minutes, spring: real time, evenly spaced", "*/20 * * * *", "Europe/Berlin", utc(3, 29, 0, 30, 0),
			[]time.Time{utc(3, 29, 0, 40, 0), utc(3, 29, 1, 0, 0), utc(3, 29, 1, 20, 0)}},

		// Six fields (seconds).
		{"6 fields, gap: the end of the gap, not 03:00:15", "15 30 2 * * *", "Europe/Berlin", utc(3, 28, 12, 0, 0),
			[]time.Time{utc(3, 29, 1, 0, 0), utc(3, 30, 0, 30, 15)}},
		{"6 fields, repeat: first occurrence", "15 30 2 * * *", "Europe/Berlin", utc(10, 24, 12, 0, 0),
			[]time.Time{utc(10, 25, 0, 30, 15), utc(10, 26, 1, 30, 15)}},
		{"6 fields, hour wildcard, spring", "0 */30 * * * *", "Europe/Berlin", utc(3, 29, 0, 45, 0),
			[]time.Time{utc(3, 29, 1, 0, 0), utc(3, 29, 1, 30, 0)}},
		{"6 fields, hour wildcard, fall", "0 */30 * * * *", "Europe/Berlin", utc(10, 24, 23, 45, 0),
			[]time.Time{utc(10, 25, 0, 0, 0), utc(10, 25, 0, 30, 0), utc(10, 25, 1, 0, 0), utc(10, 25, 1, 30, 0), utc(10, 25, 2, 0, 0)}},
		{"6 fields, every second across the gap", "* * * * * *", "Europe/Berlin", utc(3, 29, 0, 59, 58),
			[]time.Time{utc(3, 29, 0, 59, 59), utc(3, 29, 1, 0, 0), utc(3, 29, 1, 0, 1)}},

		// New York.
		{"NY: nonexistent time", "30 2 * * *", "America/New_York", utc(3, 7, 0, 0, 0),
			[]time.Time{utc(3, 7, 7, 30, 0), utc(3, 8, 7, 0, 0), utc(3, 9, 6, 30, 0)}},
		{"NY: nonexistent time on a Sunday-only job", "0 30 2 * * 0", "America/New_York", utc(3, 1, 12, 0, 0),
			[]time.Time{utc(3, 8, 7, 0, 0), utc(3, 15, 6, 30, 0)}},
		{"NY: repeated time, first occurrence", "30 1 * * *", "America/New_York", utc(10, 31, 12, 0, 0),
			[]time.Time{utc(11, 1, 5, 30, 0), utc(11, 2, 6, 30, 0)}},
		{"NY: repeated hour start", "0 1 * * *", "America/New_York", utc(10, 31, 12, 0, 0),
			[]time.Time{utc(11, 1, 5, 0, 0), utc(11, 2, 6, 0, 0)}},
		{"NY: 02:00 after the fall-back occurs once", "0 2 * * *", "America/New_York", utc(10, 31, 12, 0, 0),
			[]time.Time{utc(11, 1, 7, 0, 0), utc(11, 2, 7, 0, 0)}},
		{"NY: hour wildcard, both passes", "30 * * * *", "America/New_York", utc(11, 1, 5, 0, 0),
			[]time.Time{utc(11, 1, 5, 30, 0), utc(11, 1, 6, 30, 0), utc(11, 1, 7, 30, 0)}},
		{"NY: hour wildcard, gap skipped", "30 * * * *", "America/New_York", utc(3, 8, 6, 0, 0),
			[]time.Time{utc(3, 8, 6, 30, 0), utc(3, 8, 7, 30, 0)}},
		{"NY: @every unaffected", "@every 1h", "America/New_York", utc(11, 1, 5, 0, 0),
			[]time.Time{utc(11, 1, 6, 0, 0), utc(11, 1, 7, 0, 0), utc(11, 1, 8, 0, 0)}},
	}
	for _, tc := range tests {
		t.Run(tc.loc+"/"+tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := ParseSchedule(tc.spec, mustLoad(t, tc.loc))
			if err != nil {
				t.Fatal(err)
			}
			at := tc.from
			for i, want := range tc.want {
				got := s.Next(at)
				if !got.Equal(want) {
					t.Fatalf("%q from %v: tick %d = %v (%v), want %v", tc.spec, tc.from, i, got.UTC(), got, want)
				}
				at = got
			}
		})
	}
}

// TestNextDSTAgainstReference compares Next with a brute-force reading of
// the documented rules, minute by minute around every 2026 transition of
// zones with different kinds of transitions.
func TestNextDSTAgainstReference(t *testing.T) {
	t.Parallel()
	zones := []struct {
		name string
		year int
	}{
		{"Europe/Berlin", 2026},
		{"America/New_York", 2026},
		{"Australia/Sydney", 2026},    // southern hemisphere
		{"Australia/Lord_Howe", 2026}, // 30-minute DST
		{"America/Santiago", 2026},    // DST starts at midnight: 00:xx does not exist
		{"Pacific/Apia", 2011},        // skipped 2011-12-30 entirely
	}
	specs := []string{
		"30 2 * * *", "0 2 * * *", "0,30 0-3 * * *", "*/15 1,2 * * *", "0-59/7 2 * * *",
		"45 23 * * *", "0 */2 * * *", "@daily", "0 0 * * 0",
		"*/20 * * * *", "30 * * * *", "@hourly", "* * * * *",
	}
	for _, z := range zones {
		loc := mustLoad(t, z.name)
		for _, tr := range transitions(loc, z.year) {
			for _, spec := range specs {
				t.Run(fmt.Sprintf("%s/%s/%s", z.name, tr.Format(time.RFC3339), spec), func(t *testing.T) {
					t.Parallel()
					s, err := ParseSchedule(spec, loc)
					if err != nil {
						t.Fatal(err)
					}
					from, to := tr.Add(-26*time.Hour), tr.Add(26*time.Hour)
					want := referenceTicks(t, spec, loc, from, to)
					var got []time.Time
					for at := s.Next(from); !at.IsZero() && !at.After(to); at = s.Next(at) {
						got = append(got, at)
					}
					if fmt.Sprint(utcAll(got)) != fmt.Sprint(utcAll(want)) {
						t.Errorf("ticks in (%v, %v]:\n got %v\nwant %v", from, to, utcAll(got), utcAll(want))
					}
				})
			}
		}
	}
}

// transitions returns the instants in year at which loc's offset changes.
func transitions(loc *time.Location, year int) []time.Time {
	var out []time.Time
	at := time.Date(year, 1, 1, 0, 0, 0, 0, loc)
	endOfYear := time.Date(year+1, 1, 1, 0, 0, 0, 0, loc)
	for {
		_, end := at.ZoneBounds()
		if end.IsZero() || !end.Before(endOfYear) {
			return out
		}
		_, before := end.Add(-time.Second).Zone()
		if _, after := end.Zone(); after != before {
			out = append(out, end)
		}
		at = end
	}
}

// referenceTicks lists the ticks in (from, to] by testing every minute
// (the specs under test have second 0, and the zones change offset on
// whole minutes) against the documented rules, using only the time
// package's conversions.
func referenceTicks(t *testing.T, spec string, loc *time.Location, from, to time.Time) []time.Time {
	t.Helper()
	parsed, err := parser.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	f := fieldsOfSchedule(t, parsed)
	matches := func(w time.Time) bool { // w: a wall clock, read via its fields
		return w.Second() == 0 &&
			f.minute&(1<<w.Minute()) != 0 && f.hour&(1<<w.Hour()) != 0 &&
			f.month&(1<<w.Month()) != 0 && f.dayMatches(int64(w.Day()), int64(w.Weekday()), 0, 0)
	}
	step := func(u time.Time) time.Time { return u.Add(time.Minute) }
	return referenceScan(matches, f.everyHour(), loc, from.Truncate(time.Minute).Add(time.Minute), to, step)
}

// referenceScan applies the documented DST rules to the wall-clock matcher
// matches at the candidate instants u, u = step(u), ... up to to: every
// instant at which a tick may fall must be a candidate. realTime: the
// spec's hour field matches every hour.
func referenceScan(matches func(w time.Time) bool, realTime bool, loc *time.Location, u, to time.Time, step func(time.Time) time.Time) []time.Time {
	naive := func(u time.Time) time.Time { // u's wall clock as a UTC time
		_, off := u.In(loc).Zone()
		return u.Add(time.Duration(off) * time.Second).UTC()
	}
	var out []time.Time
	for ; !u.After(to); u = step(u) {
		w := naive(u)
		tick := matches(w)
		if tick && !realTime {
			// Only the first occurrence of a wall-clock time counts.
			for _, d := range []time.Duration{30 * time.Minute, time.Hour, 2 * time.Hour} {
				if naive(u.Add(-d)).Equal(w) {
					tick = false
				}
			}
		}
		if !tick && !realTime {
			// The end of a gap ticks if a skipped wall-clock time matches.
			if before := naive(u.Add(-time.Minute)).Add(time.Minute); before.Before(w) {
				for g := before; g.Before(w); g = g.Add(time.Minute) {
					if matches(g) {
						tick = true
						break
					}
				}
			}
		}
		if tick {
			out = append(out, u)
		}
	}
	return out
}

func utcAll(ts []time.Time) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.UTC().Format("01-02T15:04:05Z")
	}
	return out
}
