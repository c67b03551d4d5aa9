package crontab

import "strings"

// inCrontab ends the hints that show a command with '%' in it.
const inCrontab = ` (in a crontab, write each % as \%)`

// Hints for the extensions of other crons (Quartz, AWS, Jenkins, fcron,
// OpenBSD cron) that neither Vixie cron nor cronlock's schedules accept.
const (
	hintLast = `run on the candidate days and test in the command, e.g. day-of-month 28-31 with ` +
		`[ "$(date -d tomorrow +%d)" = 01 ] && ... for the last day of the month` + inCrontab
	hintNth = `use day-of-month 1-7 (8-14, ...) with day-of-week * and test the weekday in the command, ` +
		`e.g. [ "$(date +%u)" = 1 ] && ... for the first Monday` + inCrontab
	hintWeekday  = "list the days explicitly, or test the date in the command"
	hintQuestion = "write * instead of ?"
	hintRandom   = "pick a fixed value: cronlock runs each tick on one replica, so spreading load by random minutes is not needed"
)

// extension reports elem if it uses a syntax of another cron: "L" (last),
// "W" (nearest weekday), "#" (nth weekday), "?" (no specific value), "~"
// (random) or "H" (hashed). Month and day names are checked first, since
// "jul" contains an L and "wed" a W. The Quartz day forms that cronlock
// has (quartzElement) are taken before it; what reaches it is L, W or #
// elsewhere.
func extension(elem string, k fieldKind) *problem {
	if _, isName := k.names[strings.ToLower(elem)]; isName {
		return nil
	}
	upper := strings.ToUpper(elem)
	switch {
	case strings.Contains(elem, "#"):
		return problemf(hintNth, "%s field %q: # (the nth weekday of the month) is not supported", k.name, elem)
	case strings.Contains(elem, "?"):
		return problemf(hintQuestion, "%s field %q: ? is not cron syntax (it is Quartz's)", k.name, elem)
	case strings.Contains(elem, "~"):
		return problemf(hintRandom, "%s field %q: ~ (a random value) is not supported", k.name, elem)
	case strings.HasPrefix(upper, "H"):
		return problemf(hintRandom, "%s field %q: H (a hashed value, as in Jenkins) is not supported", k.name, elem)
	case strings.HasSuffix(upper, "W") && k.index == domField.index:
		return problemf(hintWeekday, "%s field %q: W (the nearest weekday) is not supported", k.name, elem)
	case strings.Contains(upper, "L") && (k.index == domField.index || k.index == dowField.index):
		return problemf(hintLast, "%s field %q: L (the last day) is not supported", k.name, elem)
	}
	return nil
}
