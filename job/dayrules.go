package job

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Quartz's day-field forms, which robfig/cron refuses:
//
//	day-of-month  L      the last day of the month
//	              L-n    n days before it (n 1..30)
//	              LW     the last weekday (Monday to Friday) of the month
//	              nW     the weekday nearest day n (1..31) within the month
//	day-of-week   dL     the last weekday d of the month (d 0..7 or a name)
//	              d#k    the k-th weekday d of the month (k 1..5)
//
// They may stand in a list beside plain values ("L,15", "1#1,5L"); they
// take no range or step. A day matches such a field if any of its elements
// matches. preParse takes them out of the spec before robfig/cron parses the
// rest, and dayRules evaluates them per month.

// dayRules holds the Quartz elements of a spec's two day fields; nil in a
// spec without any (most specs: the pointer costs 8 bytes).
type dayRules struct {
	// lastMinus holds n for each "L-n" ("L" is n = 0).
	lastMinus []int8
	// lastWeekday: "LW".
	lastWeekday bool
	// nearest holds n for each "nW".
	nearest []int8
	// lastDow has bit d for each "dL" (d 0..6, Sunday 0).
	lastDow uint8
	// nth[k-1] has bit d for each "d#k".
	nth [maxNth]uint8
}

// maxNth is the largest k of "d#k": no month has six of a weekday.
const maxNth = 5

// maxLastMinus is the largest n of "L-n": L-30 is the 1st of a 31-day month.
const maxLastMinus = 30

// Positions of the day fields in a spec of 5 fields; a 6-field spec has a
// leading seconds field.
const (
	domIndex5 = 2
	dowIndex5 = 4
)

// weekdayNames are robfig/cron's names for the day-of-week values.
var weekdayNames = map[string]int{"SUN": 0, "MON": 1, "TUE": 2, "WED": 3, "THU": 4, "FRI": 5, "SAT": 6}

// preParse takes the Quartz elements out of the day fields of rest (a spec
// of 5 or 6 fields, or a descriptor). It returns the spec robfig/cron should
// parse, the rules (nil if none) and, for each day field that held only
// Quartz elements, that robfig's value for it is a placeholder whose bits
// must be cleared. Errors name the field and the element.
func preParse(rest string) (spec string, r *dayRules, clearDom, clearDow bool, err error) {
	if strings.HasPrefix(rest, "@") {
		return rest, nil, false, false, nil
	}
	f := strings.Fields(rest)
	if len(f) != 5 && len(f) != 6 {
		return rest, nil, false, false, nil // robfig's error says what is wrong
	}
	off := len(f) - 5
	dom, dow := &f[domIndex5+off], &f[dowIndex5+off]
	r = &dayRules{}
	var any bool
	if *dom, clearDom, any, err = r.split(*dom, "day-of-month", r.addDom); err != nil {
		return "", nil, false, false, err
	}
	found := any
	if *dow, clearDow, any, err = r.split(*dow, "day-of-week", r.addDow); err != nil {
		return "", nil, false, false, err
	}
	if !found && !any {
		return rest, nil, false, false, nil
	}
	return strings.Join(f, " "), r, clearDom, clearDow, nil
}

// placeholder stands for a day field that held only Quartz elements: a value
// both fields accept, not a star, whose bit is then cleared.
const placeholder = "1"

// split removes from field the list elements that add accepts (add reports
// whether an element is one of its forms) and returns the rest of the list,
// placeholder if nothing is left; found reports whether add took any.
func (r *dayRules) split(field, name string, add func(string) (bool, error)) (rest string, cleared, found bool, err error) {
	var plain []string
	for _, e := range strings.Split(field, ",") {
		took, err := add(strings.ToUpper(e))
		if err != nil {
			return "", false, false, fmt.Errorf("%s %s: %w", name, quote(e), err)
		}
		if took {
			found = true
		} else {
			plain = append(plain, e)
		}
	}
	if !found {
		return field, false, false, nil
	}
	if len(plain) == 0 {
		return placeholder, true, true, nil
	}
	return strings.Join(plain, ","), false, true, nil
}

// addDom adds e if it is a day-of-month Quartz element: it contains an L or
// a W (the field has no names).
func (r *dayRules) addDom(e string) (bool, error) {
	if !strings.ContainsAny(e, "LW") {
		return false, nil
	}
	if strings.ContainsAny(e, "/*?") || (strings.Contains(e, "-") && !strings.HasPrefix(e, "L-")) {
		return false, errors.New("L and W take no range or step; write L, L-3, LW or 15W")
	}
	switch {
	case e == "L":
		r.lastMinus = append(r.lastMinus, 0)
	case e == "LW":
		r.lastWeekday = true
	case strings.HasPrefix(e, "L-"):
		n, err := strconv.Atoi(e[2:])
		if err != nil || n < 0 || n > maxLastMinus {
			return false, fmt.Errorf("want L-n with n 0 to %d, e.g. L-3 (three days before the last day)", maxLastMinus)
		}
		r.lastMinus = append(r.lastMinus, int8(n))
	case strings.HasSuffix(e, "W"):
		n, err := strconv.Atoi(e[:len(e)-1])
		if err != nil || n < 1 || n > 31 {
			return false, errors.New("want nW with a day n of 1 to 31, e.g. 15W (the weekday nearest the 15th)")
		}
		r.nearest = append(r.nearest, int8(n))
	default:
		return false, errors.New("unknown form; write L, L-3, LW or 15W")
	}
	return true, nil
}

// addDow adds e if it is a day-of-week Quartz element: it contains a # or
// ends in L.
func (r *dayRules) addDow(e string) (bool, error) {
	day, k, nth := strings.Cut(e, "#")
	if !nth {
		var last bool
		if day, last = strings.CutSuffix(e, "L"); !last {
			return false, nil
		}
	}
	if day == "" {
		return false, errors.New("want a weekday before L or #, e.g. 5L (the last Friday) or 1#2 (the second Monday)")
	}
	d, err := weekdayOf(day)
	if err != nil {
		return false, err
	}
	if !nth {
		r.lastDow |= 1 << d
		return true, nil
	}
	n, err := strconv.Atoi(k)
	if err != nil || n < 1 || n > maxNth {
		return false, fmt.Errorf("want d#k with k 1 to %d, e.g. 1#2 (the second Monday)", maxNth)
	}
	r.nth[n-1] |= 1 << d
	return true, nil
}

// weekdayOf reads a day-of-week value as cronlock's cron does: 0 to 7 (0 and
// 7 are Sunday) or a three-letter name.
func weekdayOf(s string) (int, error) {
	if d, ok := weekdayNames[s]; ok {
		return d, nil
	}
	d, err := strconv.Atoi(s)
	if err != nil || d < 0 || d > 7 {
		return 0, fmt.Errorf("weekday %s: want 0 to 7 (0 and 7 are Sunday) or SUN to SAT", quote(s))
	}
	return d % 7, nil
}

// month returns the days of a month of dim days whose 1st is weekday wd1
// that the Quartz elements match, as bit sets over the day numbers: dom for
// the day-of-month field, dow for the day-of-week field.
func (r *dayRules) month(dim, wd1 int64) (dom, dow uint64) {
	wdOf := func(d int64) int64 { return (wd1 + d - 1) % 7 }
	for _, n := range r.lastMinus {
		if d := dim - int64(n); d >= 1 {
			dom |= 1 << uint(d)
		}
	}
	if r.lastWeekday {
		d := dim
		switch wdOf(dim) {
		case 6:
			d--
		case 0:
			d -= 2
		}
		dom |= 1 << uint(d)
	}
	for _, n := range r.nearest {
		if d, ok := nearestWeekday(int64(n), dim, wdOf(int64(n))); ok {
			dom |= 1 << uint(d)
		}
	}
	for wd := int64(0); wd < 7; wd++ {
		first := 1 + (wd-wd1+7)%7 // the first day of weekday wd
		if r.lastDow&(1<<uint(wd)) != 0 {
			dow |= 1 << uint(first+(dim-first)/7*7)
		}
		for k := int64(0); k < maxNth; k++ {
			if d := first + 7*k; r.nth[k]&(1<<uint(wd)) != 0 && d <= dim {
				dow |= 1 << uint(d)
			}
		}
	}
	return dom, dow
}

// nearestWeekday returns Quartz's "nW" in a month of dim days where day n is
// weekday wd: n on Monday to Friday; the Friday before a Saturday, or the
// Monday after it when n is the 1st; the Monday after a Sunday, or the
// Friday before it when n is the last day. A month shorter than n has none,
// as the plain day n.
func nearestWeekday(n, dim, wd int64) (int64, bool) {
	switch {
	case n > dim:
		return 0, false
	case wd == 6 && n == 1:
		return 3, true
	case wd == 6:
		return n - 1, true
	case wd == 0 && n == dim:
		return n - 2, true
	case wd == 0:
		return n + 1, true
	}
	return n, true
}
