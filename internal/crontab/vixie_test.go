package crontab

import (
	"strconv"
	"strings"
	"time"
)

// vixie is an independent reading of five cron time fields, written the way
// cronie's entry.c reads them, for comparing converted schedules with: one
// bit set per allowed value (day-of-week 7 folded onto 0), and the DOM_STAR
// and DOW_STAR flags, set when the field's text begins with '*'.
type vixie struct {
	min, hour, dom, month, dow uint64
	domStar, dowStar           bool
}

var vixieNames = map[string]int{
	"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8,
	"sep": 9, "oct": 10, "nov": 11, "dec": 12,
	"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6,
}

// vixieDescriptors are cronie's expansions of the @-specs.
var vixieDescriptors = map[string]string{
	"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
	"@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}

// parseVixie parses well-formed fields (the test table has no bad ones).
func parseVixie(spec string) vixie {
	if d, ok := vixieDescriptors[spec]; ok {
		spec = d
	}
	f := strings.Fields(spec)
	v := vixie{
		min: vixieBits(f[0], 0, 59), hour: vixieBits(f[1], 0, 23), dom: vixieBits(f[2], 1, 31),
		month: vixieBits(f[3], 1, 12), dow: vixieBits(f[4], 0, 7),
		domStar: f[2][0] == '*', dowStar: f[4][0] == '*',
	}
	if v.dow&(1<<7) != 0 {
		v.dow = v.dow&^(1<<7) | 1
	}
	return v
}

func vixieBits(text string, lo, hi int) uint64 {
	var b uint64
	for _, e := range strings.Split(text, ",") {
		r, s, _ := strings.Cut(e, "/")
		step := 1
		if s != "" {
			step, _ = strconv.Atoi(s)
		}
		a, z := lo, hi
		if r != "*" {
			x, y, isRange := strings.Cut(r, "-")
			a = vixieNum(x)
			z = a
			if isRange {
				z = vixieNum(y)
			}
		}
		for i := a; i <= z; i += step {
			b |= 1 << i
		}
	}
	return b
}

func vixieNum(s string) int {
	if n, ok := vixieNames[strings.ToLower(s)]; ok {
		return n
	}
	n, _ := strconv.Atoi(s)
	return n
}

// matches reports whether cron runs the entry in the minute of wall-clock
// time t: cronie's rule for the day is
// (DOM_STAR || DOW_STAR) ? (dom && dow) : (dom || dow).
func (v vixie) matches(t time.Time) bool {
	has := func(b uint64, i int) bool { return b&(1<<i) != 0 }
	if !has(v.min, t.Minute()) || !has(v.hour, t.Hour()) || !has(v.month, int(t.Month())) {
		return false
	}
	dom, dow := has(v.dom, t.Day()), has(v.dow, int(t.Weekday()))
	if v.domStar || v.dowStar {
		return dom && dow
	}
	return dom || dow
}
