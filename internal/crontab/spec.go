package crontab

import (
	"fmt"
	"strings"

	"github.com/robfig/cron/v3"
)

// descriptors are the @-specs Vixie cron and cronlock read alike.
var descriptors = map[string]bool{
	"@yearly": true, "@annually": true, "@monthly": true, "@weekly": true,
	"@daily": true, "@midnight": true, "@hourly": true,
}

const hintReboot = "cronlock has no @reboot: its jobs run on ticks, each on one replica; " +
	"start the command from the service manager of each host instead (e.g. a systemd unit)"

// descriptorSpec checks an @-spec.
func descriptorSpec(d string) (string, *problem) {
	switch {
	case descriptors[d]:
		return d, nil
	case d == "@reboot":
		return "", problemf(hintReboot, "@reboot is not supported")
	}
	return "", problemf("use @yearly, @annually, @monthly, @weekly, @daily, @midnight or @hourly, or five time fields",
		"unknown schedule %q", d)
}

// robfigParser reads 5-field specs as package job does (it adds only the
// optional seconds field and the zone prefix).
var robfigParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)

// starBit is the bit robfig/cron sets in a field it reads as a star.
const starBit = 1 << 63

// fieldSpec parses the five time fields of an entry and returns a cronlock
// spec with the times Vixie cron gives them.
func fieldSpec(texts []string) (string, *problem) {
	var fs [5]field
	for i, k := range timeFields {
		f, p := parseField(texts[i], k)
		if p != nil {
			return "", p
		}
		fs[i] = f
	}
	out := make([]string, len(fs))
	for i, k := range timeFields {
		out[i] = spelled(fs[i], k)
	}
	dom, dow, p := days(fs[domField.index], fs[dowField.index])
	if p != nil {
		return "", p
	}
	out[domField.index], out[dowField.index] = dom, dow
	return strings.Join(out, " "), nil
}

// days returns the day fields for cronlock, with Vixie cron's either-day
// rule: a day matches if both fields do when one of them begins with '*',
// and if either does otherwise. cronlock (robfig/cron) decides by whether a
// field is written as "*", so a field that matches every day is written
// "*" and the rest keep their values; a "both must match" of two
// restricted fields has no cronlock spelling and is reported.
func days(dom, dow field) (string, string, *problem) {
	if p := quartzDays(dom, dow); p != nil {
		return "", "", p
	}
	domAll, dowAll := dom.full(domField), dow.full(dowField)
	domText, dowText := spelled(dom, domField), spelled(dow, dowField)
	if dom.star || dow.star { // both must match
		switch {
		case domAll && dowAll:
			return "*", "*", nil
		case domAll:
			return "*", dowText, nil
		case dowAll:
			return domText, "*", nil
		}
		return "", "", problemf(
			`keep one day field and write the other as *, then test the other in the command, `+
				`e.g. [ $(( $(date +%-d) % 2 )) = 1 ] && ... for odd dates`+inCrontab,
			"day-of-month %q and day-of-week %q: cron runs this only on days that match both "+
				"(a day field beginning with '*' turns off its either-day rule), "+
				"but cronlock would run it on days that match either", dom.text, dow.text)
	}
	if domAll || dowAll { // either may match: every day
		return "*", "*", nil
	}
	return domText, dowText, nil
}

// spelled returns the field's text if robfig/cron reads it as the same set
// of values (which excludes its star reading only if the set is full), else
// the canonical list of the values.
func spelled(f field, k fieldKind) string {
	if len(f.quartz) > 0 {
		plain := f
		plain.quartz, plain.text = nil, strings.Join(plainElements(f.text, f.quartz), ",")
		switch sp := spelled(plain, k); {
		case f.bits == 0:
			return strings.Join(f.quartz, ",")
		case sp == plain.text:
			return f.text // as written, in its order
		default:
			return sp + "," + strings.Join(f.quartz, ",")
		}
	}
	if b, ok := robfigField(f.text, k); ok && b == f.bits {
		return f.text
	}
	return canonical(f.bits)
}

// robfigField returns the values robfig/cron reads in text as field k.
func robfigField(text string, k fieldKind) (b uint64, ok bool) {
	defer func() {
		if recover() != nil { // robfig/cron is not written for hostile input
			b, ok = 0, false
		}
	}()
	parts := []string{"*", "*", "*", "*", "*"}
	parts[k.index] = text
	s, err := robfigParser.Parse(strings.Join(parts, " "))
	if err != nil {
		return 0, false
	}
	spec, isSpec := s.(*cron.SpecSchedule)
	if !isSpec {
		return 0, false
	}
	all := [...]uint64{spec.Minute, spec.Hour, spec.Dom, spec.Month, spec.Dow}
	return all[k.index] &^ starBit, true
}

// describe is a short note on how a spec was rewritten, for the job's
// comment; "" when it was not.
func describe(original, converted string) string {
	if original == converted {
		return ""
	}
	return fmt.Sprintf("time fields %q written as %q for cronlock (same times as cron)", original, converted)
}
