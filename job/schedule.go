package job

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/robfig/cron/v3"
)

// Schedule yields the tick instants of a cron spec.
//
// Implementations are immutable and safe for concurrent use.
type Schedule interface {
	// Next returns the first tick strictly after t (zero time if none within
	// ~5 years).
	//
	// Ticks fall on whole seconds. Next is deterministic: it depends only on
	// the spec, the location and t, never on when or where it is called, so
	// all replicas agree on the ticks. The result is expressed in the
	// schedule's location (UTC for @every); compare instants with Equal.
	Next(t time.Time) time.Time
}

// maxSpecLen bounds the length of a spec. Real specs are a few dozen bytes;
// the bound keeps pathological input cheap to reject.
const maxSpecLen = 1024

// parser accepts 5 fields, or 6 with leading seconds, and descriptors.
var parser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour |
	cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseSchedule parses a cron spec whose wall-clock fields are evaluated in
// loc (UTC if nil).
//
// Accepted forms:
//   - 5 fields "minute hour day-of-month month day-of-week", or 6 with a
//     leading seconds field ("0 */5 * * * *"); ranges, lists, steps, month
//     and weekday names as in robfig/cron (which does the field parsing);
//     '?' is a synonym of '*'. When both day fields are restricted a day
//     matches if either does; "*/2" counts as restricted, unlike in Vixie
//     cron (see "Day of month and day of week" in the package
//     documentation).
//   - in the day fields, Quartz's L, W and # forms: "L", "L-3", "LW", "15W"
//     in the day-of-month, "5L" (the last Friday) and "1#2" (the second
//     Monday) in the day-of-week; see "Last, nearest weekday and nth
//     weekday" in the package documentation.
//   - descriptors @yearly (@annually), @monthly, @weekly, @daily
//     (@midnight), @hourly;
//   - "@every D" with D a Go duration (time.ParseDuration) that is a whole
//     number of seconds and at least 1s. Its ticks are the instants k·D
//     since 1970-01-01T00:00:00Z, so every process agrees on them whenever
//     it parsed the spec; it ignores loc and DST.
//   - a leading "CRON_TZ=Zone " or "TZ=Zone " (an IANA zone name, followed
//     by whitespace and the rest of the spec) replaces loc.
//
// Daylight saving time, in short (the package documentation has the
// details and examples): if the hour field matches every hour the schedule
// follows real time, ticking in both passes of a repeated hour and never for
// wall-clock times that do not exist; otherwise every matching wall-clock
// time ticks once, at its first occurrence if it occurs twice and at the end
// of the gap if it does not exist. The field evaluation is this package's
// own; robfig/cron only parses.
//
// Errors name the spec: `schedule "61 * * * *": ...`. No input panics.
func ParseSchedule(spec string, loc *time.Location) (Schedule, error) {
	s, err := parseSchedule(spec, loc)
	if err != nil {
		return nil, fmt.Errorf("schedule %s: %w", quote(spec), err)
	}
	return s, nil
}

func parseSchedule(spec string, loc *time.Location) (s Schedule, err error) {
	// robfig/cron is not written for hostile input (it indexes slices by
	// positions it did not check); turn any panic into an error.
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("invalid spec (parser failure: %v)", r)
		}
	}()

	if len(spec) > maxSpecLen {
		return nil, fmt.Errorf("longer than %d bytes", maxSpecLen)
	}
	rest := strings.TrimSpace(spec)
	if rest == "" {
		return nil, errors.New("empty")
	}
	if loc == nil {
		loc = time.UTC
	}
	if zone, after, ok := cutZonePrefix(rest); ok {
		if zone == "" {
			return nil, errors.New("empty time zone name after '='")
		}
		l, err := LoadZone(zone)
		if err != nil {
			return nil, fmt.Errorf("time zone %s: %w", quote(zone), err)
		}
		loc = l
		rest = strings.TrimSpace(after)
		if rest == "" {
			return nil, fmt.Errorf("nothing after time zone %s", quote(zone))
		}
		if _, _, again := cutZonePrefix(rest); again {
			return nil, errors.New("more than one time zone prefix")
		}
	}

	if strings.HasPrefix(rest, "@every") {
		return parseEvery(rest)
	}
	rest, rules, clearDom, clearDow, err := preParse(rest)
	if err != nil {
		return nil, err
	}
	parsed, err := parser.Parse(rest)
	if err != nil {
		return nil, err
	}
	spc, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("unsupported schedule type %T", parsed)
	}
	f := fieldsOf(spc)
	f.rules = rules
	if clearDom {
		f.dom = 0
	}
	if clearDow {
		f.dow = 0
	}
	return &specSchedule{f: f, loc: loc, realTime: f.everyHour()}, nil
}

// cutZonePrefix splits "CRON_TZ=Zone rest" or "TZ=Zone rest" into the zone
// name and the rest. ok reports whether spec has such a prefix.
func cutZonePrefix(spec string) (zone, rest string, ok bool) {
	for _, p := range []string{"CRON_TZ=", "TZ="} {
		if after, found := strings.CutPrefix(spec, p); found {
			i := strings.IndexFunc(after, unicode.IsSpace)
			if i < 0 {
				return after, "", true
			}
			return after[:i], after[i:], true
		}
	}
	return "", "", false
}

// parseEvery parses "@every D".
func parseEvery(spec string) (Schedule, error) {
	f := strings.Fields(spec)
	if f[0] != "@every" || len(f) != 2 {
		return nil, errors.New(`want "@every <duration>", e.g. "@every 90s"`)
	}
	d, err := time.ParseDuration(f[1])
	switch {
	case err != nil:
		return nil, fmt.Errorf("@every: %w", err)
	case d < time.Second:
		return nil, fmt.Errorf("@every: duration %s is shorter than 1s", f[1])
	case d%time.Second != 0:
		return nil, fmt.Errorf("@every: duration %s is not a whole number of seconds", f[1])
	case d > MaxEvery:
		return nil, fmt.Errorf("@every: duration %s is longer than %v (MaxEvery); use a cron spec for yearly jobs", f[1], MaxEvery)
	}
	return everySchedule{period: int64(d / time.Second)}, nil
}
