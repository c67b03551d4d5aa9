package crontab

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// fieldKind describes one of the five time fields of a cron entry as Vixie
// cron reads it.
type fieldKind struct {
	name     string // as in error messages: "day-of-month"
	min, max int
	names    map[string]int // three-letter names, lower case; nil if none
	index    int            // position in a 5-field spec, 0 = minute
}

// Sunday is 0 or 7 in the day-of-week field; 7 is folded onto 0.
const (
	sundayAlias = 7
	sunday      = 0
)

var (
	minuteField = fieldKind{name: "minute", min: 0, max: 59, index: 0}
	hourField   = fieldKind{name: "hour", min: 0, max: 23, index: 1}
	domField    = fieldKind{name: "day-of-month", min: 1, max: 31, index: 2}
	monthField  = fieldKind{name: "month", min: 1, max: 12, index: 3, names: map[string]int{
		"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
		"jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
	}}
	dowField = fieldKind{name: "day-of-week", min: 0, max: sundayAlias, index: 4, names: map[string]int{
		"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6,
	}}
	timeFields = []fieldKind{minuteField, hourField, domField, monthField, dowField}
)

// field is one parsed time field.
type field struct {
	text string
	bits uint64 // bit v set when value v matches; day-of-week 7 folded onto 0
	// star: the text begins with '*', which is what Vixie cron's DOM_STAR
	// and DOW_STAR record for the either-day rule.
	star bool
	// quartz holds the list's elements in Quartz's day forms (L, W, #),
	// which are not in bits; see quartz.go.
	quartz []string
}

// full reports whether the field matches every value of its kind.
func (f field) full(k fieldKind) bool {
	return f.bits == allBits(k)
}

// allBits is the set of every value of kind k (0-6 for the day of week).
func allBits(k fieldKind) uint64 {
	hi := k.max
	if k.index == dowField.index {
		hi = sundayAlias - 1
	}
	return 1<<uint(hi+1) - 1<<uint(k.min)
}

// problem is why a line cannot be converted, and what to do about it.
type problem struct {
	reason, hint string
}

func problemf(hint, format string, args ...any) *problem {
	return &problem{reason: fmt.Sprintf(format, args...), hint: hint}
}

// parseField parses text as a field of kind k with Vixie cron's syntax: a
// comma-separated list of "*", "N" and "N-M", the last two ranges optionally
// followed by "/STEP".
func parseField(text string, k fieldKind) (field, *problem) {
	if text == "?" && (k.index == domField.index || k.index == dowField.index) {
		return field{text: text, bits: allBits(k), star: true}, nil
	}
	f := field{text: text, star: strings.HasPrefix(text, "*")}
	for elem := range strings.SplitSeq(text, ",") {
		if isQuartz, p := quartzElement(elem, k); p != nil {
			return field{}, p
		} else if isQuartz {
			f.quartz = append(f.quartz, elem)
			continue
		}
		b, p := parseElement(elem, k)
		if p != nil {
			return field{}, p
		}
		f.bits |= b
	}
	if k.index == dowField.index && f.bits&(1<<sundayAlias) != 0 {
		f.bits = f.bits&^(1<<sundayAlias) | 1<<sunday
	}
	return f, nil
}

// parseElement parses one element of a list.
func parseElement(elem string, k fieldKind) (uint64, *problem) {
	if p := extension(elem, k); p != nil {
		return 0, p
	}
	rng, stepText, hasStep := strings.Cut(elem, "/")
	step := 1
	if hasStep {
		n, err := strconv.Atoi(stepText)
		if err != nil || n < 1 {
			return 0, problemf("", "%s field %q: step %q is not a positive number", k.name, elem, stepText)
		}
		step = n
	}
	lo, hi := k.min, k.max
	if rng != "*" {
		loText, hiText, isRange := strings.Cut(rng, "-")
		var p *problem
		if lo, p = value(loText, elem, k); p != nil {
			return 0, p
		}
		if !isRange && hasStep {
			return 0, problemf(fmt.Sprintf("write %s-%d/%d, which every cron reads the same way", loText, k.max, step),
				"%s field %q: a step after a single value is read differently by different crons", k.name, elem)
		}
		hi = lo
		if isRange {
			if hi, p = value(hiText, elem, k); p != nil {
				return 0, p
			}
		}
		if lo > hi {
			return 0, problemf("", "%s field %q: range runs backwards (%d > %d)", k.name, elem, lo, hi)
		}
	}
	var b uint64
	for v := lo; v <= hi; v += step {
		b |= 1 << uint(v)
	}
	return b, nil
}

// value parses a number or a name of kind k.
func value(s, elem string, k fieldKind) (int, *problem) {
	if n, ok := k.names[strings.ToLower(s)]; ok {
		return n, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || s == "" || s[0] == '+' || s[0] == '-' {
		return 0, problemf("", "%s field %q: %q is not a number%s", k.name, elem, s, nameNote(k))
	}
	if n < k.min || n > k.max {
		return 0, problemf("", "%s field %q: %d is outside %d-%d", k.name, elem, n, k.min, k.max)
	}
	return n, nil
}

func nameNote(k fieldKind) string {
	switch k.index {
	case monthField.index:
		return " or a month name (jan-dec)"
	case dowField.index:
		return " or a day name (sun-sat)"
	}
	return ""
}

// canonical writes a set of values as a list of numbers and ranges, which
// robfig/cron reads the same way as Vixie cron.
func canonical(b uint64) string {
	var parts []string
	for b != 0 {
		lo := bits.TrailingZeros64(b)
		hi := lo
		for hi+1 < 64 && b&(1<<uint(hi+1)) != 0 {
			hi++
		}
		b &^= 1<<uint(hi+1) - 1
		if lo == hi {
			parts = append(parts, strconv.Itoa(lo))
		} else {
			parts = append(parts, strconv.Itoa(lo)+"-"+strconv.Itoa(hi))
		}
	}
	return strings.Join(parts, ",")
}
