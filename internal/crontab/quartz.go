package crontab

import (
	"slices"
	"strings"

	"github.com/cronlock/cronlock/job"
)

// Quartz's day forms (L, L-3, LW, 15W in the day-of-month; 5L, 1#2 in the
// day-of-week) mean in cronlock what they mean in the crons that have them,
// so a line using them converts, with one limit: those crons disagree on
// how such a field combines with a restricted other day field (Quartz
// refuses it), so the other day field must be "*" or "?". A lone "?" is "*".

// quartzElement reports whether elem is one of the Quartz forms of field k,
// and if so whether cronlock accepts it (else the problem says why not).
func quartzElement(elem string, k fieldKind) (bool, *problem) {
	upper := strings.ToUpper(elem)
	switch k.index {
	case domField.index:
		if !strings.ContainsAny(upper, "LW") {
			return false, nil
		}
	case dowField.index:
		if _, isName := k.names[strings.ToLower(elem)]; isName ||
			!strings.Contains(upper, "#") && !strings.HasSuffix(upper, "L") {
			return false, nil
		}
	default:
		return false, nil
	}
	parts := []string{"0", "0", "*", "*", "*"}
	parts[k.index] = elem
	if _, err := job.ParseSchedule(strings.Join(parts, " "), nil); err != nil {
		return true, problemf("", "%s field %q: %s", k.name, elem, unwrapSpec(err, k))
	}
	return true, nil
}

// unwrapSpec drops the `schedule "...": day-of-month "...": ` prefixes of
// a job.ParseSchedule error: the field is named already.
func unwrapSpec(err error, k fieldKind) string {
	msg := err.Error()
	for _, prefix := range []string{"schedule ", k.name + " "} {
		if _, rest, ok := strings.Cut(msg, `": `); ok && strings.HasPrefix(msg, prefix) {
			msg = rest
		}
	}
	return msg
}

// quartzDays checks that a day field with Quartz forms stands beside a day
// field written "*" or "?".
func quartzDays(dom, dow field) *problem {
	if len(dom.quartz) == 0 && len(dow.quartz) == 0 {
		return nil
	}
	if (len(dom.quartz) == 0 || anyDay(dow.text)) && (len(dow.quartz) == 0 || anyDay(dom.text)) {
		return nil
	}
	return problemf("write the other day field as * (or ?), or split the line into one line per day field",
		"day-of-month %q and day-of-week %q: crons that have L, W and # combine them with another "+
			"restricted day field differently (Quartz refuses it)", dom.text, dow.text)
}

// anyDay reports whether a day field is written as every day: "*" or "?".
func anyDay(text string) bool { return text == "*" || text == "?" }

// plainElements returns the elements of the list text that are not in
// quartz.
func plainElements(text string, quartz []string) []string {
	var out []string
	for e := range strings.SplitSeq(text, ",") {
		if !slices.Contains(quartz, e) {
			out = append(out, e)
		}
	}
	return out
}
