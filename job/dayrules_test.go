package job

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// The reference meaning of the Quartz day forms, on a wall-clock date w,
// written with the time package alone and as directly as the definitions
// read.

func refDim(w time.Time) int { return time.Date(w.Year(), w.Month()+1, 0, 0, 0, 0, 0, time.UTC).Day() }

func refIsWeekday(y int, m time.Month, d int) bool {
	wd := time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Weekday()
	return wd != time.Saturday && wd != time.Sunday
}

// refLastMinus: day dim-n.
func refLastMinus(n int) func(time.Time) bool {
	return func(w time.Time) bool { return w.Day() == refDim(w)-n }
}

// refLastWeekday: the last day of the month that is Monday to Friday.
func refLastWeekday(w time.Time) bool {
	for d := refDim(w); d >= 1; d-- {
		if refIsWeekday(w.Year(), w.Month(), d) {
			return w.Day() == d
		}
	}
	return false
}

// refNearest: the Monday-to-Friday day of the month nearest day n (no tie
// can arise); none when the month has no day n.
func refNearest(n int) func(time.Time) bool {
	return func(w time.Time) bool {
		if n > refDim(w) {
			return false
		}
		best := 0
		for d := 1; d <= refDim(w); d++ {
			if refIsWeekday(w.Year(), w.Month(), d) && (best == 0 || abs(d-n) < abs(best-n)) {
				best = d
			}
		}
		return w.Day() == best
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// refLastDow: weekday wd with no later one in the month.
func refLastDow(wd time.Weekday) func(time.Time) bool {
	return func(w time.Time) bool { return w.Weekday() == wd && w.Day()+7 > refDim(w) }
}

// refNth: the k-th weekday wd of the month.
func refNth(wd time.Weekday, k int) func(time.Time) bool {
	return func(w time.Time) bool { return w.Weekday() == wd && (w.Day()-1)/7 == k-1 }
}

func refDay(d int) func(time.Time) bool { return func(w time.Time) bool { return w.Day() == d } }

func refDow(wd time.Weekday) func(time.Time) bool {
	return func(w time.Time) bool { return w.Weekday() == wd }
}

func refAny(ps ...func(time.Time) bool) func(time.Time) bool {
	return func(w time.Time) bool {
		for _, p := range ps {
			if p(w) {
				return true
			}
		}
		return false
	}
}

func refAll(time.Time) bool { return true }

// dayFormCase is a spec with a single minute value and its meaning: the
// hours (nil: every hour), the months (nil: every month) and the days.
type dayFormCase struct {
	spec   string
	minute int
	hours  []int
	months []time.Month
	day    func(time.Time) bool
}

func (c dayFormCase) matches(w time.Time) bool {
	return w.Second() == 0 && w.Minute() == c.minute &&
		(c.hours == nil || contains(c.hours, w.Hour())) &&
		(c.months == nil || contains(c.months, w.Month())) && c.day(w)
}

func contains[T comparable](xs []T, x T) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

var dayFormCases = []dayFormCase{
	{"30 9 L * *", 30, []int{9}, nil, refLastMinus(0)},
	{"30 9 L-3 * *", 30, []int{9}, nil, refLastMinus(3)},
	{"0 2 LW * *", 0, []int{2}, nil, refLastWeekday},
	{"15 8 15W * *", 15, []int{8}, nil, refNearest(15)},
	{"0 12 1W * *", 0, []int{12}, nil, refNearest(1)},
	{"0 12 31W * *", 0, []int{12}, nil, refNearest(31)},
	{"45 17 ? * 5L", 45, []int{17}, nil, refLastDow(time.Friday)},
	{"30 2 ? * 0L", 30, []int{2}, nil, refLastDow(time.Sunday)}, // Berlin's transition days
	{"0 3 ? * 7L", 0, []int{3}, nil, refLastDow(time.Sunday)},
	{"0 9 ? * 1#2", 0, []int{9}, nil, refNth(time.Monday, 2)},
	{"0 9 ? * 1#5", 0, []int{9}, nil, refNth(time.Monday, 5)},
	{"0 9 ? * FRI#2", 0, []int{9}, nil, refNth(time.Friday, 2)},
	{"0 9 ? * fri#2,SATL", 0, []int{9}, nil, refAny(refNth(time.Friday, 2), refLastDow(time.Saturday))},
	{"0 9,21 L,15 * *", 0, []int{9, 21}, nil, refAny(refLastMinus(0), refDay(15))},
	{"0 9 ? * 1#1,5L", 0, []int{9}, nil, refAny(refNth(time.Monday, 1), refLastDow(time.Friday))},
	{"0 9 15 * ?", 0, []int{9}, nil, refDay(15)},
	{"0 9 ? * MON", 0, []int{9}, nil, refDow(time.Monday)},
	// Both day fields restricted: a day matching either fires.
	{"0 9 L * 1", 0, []int{9}, nil, refAny(refLastMinus(0), refDow(time.Monday))},
	{"0 9 15W * 5L", 0, []int{9}, nil, refAny(refNearest(15), refLastDow(time.Friday))},
	{"0 9 1 * 1#2", 0, []int{9}, nil, refAny(refDay(1), refNth(time.Monday, 2))},
	// The day field "*" with the other restricted: only the other counts.
	{"0 9 lw * *", 0, []int{9}, nil, refLastWeekday},
	{"0 6 L 2 *", 0, []int{6}, []time.Month{time.February}, refLastMinus(0)}, // 28th and 29th
	{"0 0 8 L-1 * ?", 0, []int{8}, nil, refLastMinus(1)},                     // 6 fields
	{"30 * L * *", 30, nil, nil, refLastMinus(0)},                            // real time: 2027-10-31 is Berlin's overlap
	{"0 1-4 ? 3,10 SUNL", 0, []int{1, 2, 3, 4}, []time.Month{time.March, time.October}, refLastDow(time.Sunday)},
	{"0 9 * * *", 0, []int{9}, nil, refAll},
}

// TestDayFormsAgainstReference compares Next, stepped from 2027 to the end
// of 2032 (the leap days of 2028 and 2032), with a brute-force scan of the
// reference meanings above in UTC and Europe/Berlin, under the DST rules of
// referenceScan.
//
// The scan looks at minute 0 and the spec's minute of every UTC hour rather
// than at every minute, which finds the same ticks: both zones' offsets are
// whole hours, so a wall-clock time at the spec's minute is that minute of
// a UTC hour, and the only other ticks, at the end of a DST gap, fall on a
// transition, at minute 0 of a UTC hour.
func TestDayFormsAgainstReference(t *testing.T) {
	t.Parallel()
	from := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	to := time.Date(2033, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, zone := range []string{"UTC", "Europe/Berlin"} {
		loc := mustLoad(t, zone)
		for _, c := range dayFormCases {
			t.Run(zone+"/"+c.spec, func(t *testing.T) {
				t.Parallel()
				s, err := ParseSchedule(c.spec, loc)
				if err != nil {
					t.Fatal(err)
				}
				step := func(u time.Time) time.Time {
					if u.Minute() == 0 && c.minute != 0 {
						return u.Add(time.Duration(c.minute) * time.Minute)
					}
					return u.Truncate(time.Hour).Add(time.Hour)
				}
				want := referenceScan(c.matches, c.hours == nil, loc, from, to, step)
				got := stepTicks(s, from.Add(-time.Second), to)
				if len(want) < 6 { // a year has at least one
					t.Fatalf("reference found only %d ticks: the case is wrong", len(want))
				}
				if g, w := fmt.Sprint(utcAll(got)), fmt.Sprint(utcAll(want)); g != w {
					t.Errorf("%d ticks, want %d; first difference: %s", len(got), len(want), firstDiff(got, want))
				}
			})
		}
	}
}

// firstDiff describes where two tick lists first differ.
func firstDiff(got, want []time.Time) string {
	for i := range min(len(got), len(want)) {
		if !got[i].Equal(want[i]) {
			return fmt.Sprintf("tick %d is %v, want %v", i, got[i].UTC(), want[i].UTC())
		}
	}
	if len(got) > len(want) {
		return fmt.Sprintf("extra tick %v", got[len(want)].UTC())
	}
	return fmt.Sprintf("missing tick %v", want[len(got)].UTC())
}

// TestDayFormsErrors checks that a bad Quartz element is refused with the
// field and the element named.
func TestDayFormsErrors(t *testing.T) {
	t.Parallel()
	for spec, want := range map[string]string{
		"0 9 32W * *":    `day-of-month "32W": want nW with a day n of 1 to 31`,
		"0 9 0W * *":     `day-of-month "0W"`,
		"0 9 L-31 * *":   `day-of-month "L-31": want L-n with n 0 to 30`,
		"0 9 1-15W * *":  `day-of-month "1-15W": L and W take no range or step`,
		"0 9 L/2 * *":    `day-of-month "L/2"`,
		"0 9 WL * *":     `day-of-month "WL"`,
		"0 9 ? * 1#6":    `day-of-week "1#6": want d#k with k 1 to 5`,
		"0 9 ? * 1#0":    `day-of-week "1#0"`,
		"0 9 ? * 8L":     `day-of-week "8L": weekday "8"`,
		"0 9 ? * L":      `day-of-week "L": want a weekday before L or #`,
		"0 9 ? * #2":     `day-of-week "#2"`,
		"0 9 ? * FOO#2":  `day-of-week "FOO#2": weekday "FOO"`,
		"0 9 ? * 1-5#2":  `day-of-week "1-5#2"`,
		"0 9 L,32W * *":  `day-of-month "32W"`,
		"0 9 ? * 1#1,9L": `day-of-week "9L"`,
	} {
		_, err := ParseSchedule(spec, nil)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "schedule "+quote(spec)+": ") {
			t.Errorf("%s: got %v, want an error containing %q", spec, err, want)
		}
	}
}

// TestDayFormsNeverFires checks the structural answer for Quartz forms: a
// fifth Monday exists in some months, a 31st weekday only in 31-day ones,
// and no February has an L-29.
func TestDayFormsNeverFires(t *testing.T) {
	t.Parallel()
	for spec, never := range map[string]bool{
		"0 9 ? * 1#5":  false,
		"0 9 ? 2 1#5":  false, // a leap February starting on a Monday
		"0 9 31W 2 *":  true,
		"0 9 31W 4 *":  true,
		"0 9 30W 2 *":  true,
		"0 9 29W 2 *":  false,
		"0 9 L-29 2 *": true,
		"0 9 L-28 2 *": false, // the 1st of a leap February
		"0 9 L 2 *":    false,
		"0 9 LW * *":   false,
	} {
		s, err := ParseSchedule(spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := NeverFires(s); got != never {
			t.Errorf("NeverFires(%s) = %v, want %v", spec, got, never)
		}
	}
}
