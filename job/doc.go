// Package job defines what cronlock schedules: a Job (a name, a cron
// schedule and a function), the Schedule that yields its ticks, and the
// RunInfo a running job reads from its context.
//
// # Ticks
//
// A tick is an instant at which a job is due. Every replica parses the same
// specs and must compute the same ticks, because the tick is what the lock
// is taken for: Schedule.Next depends only on the spec, the location and
// its argument, never on when or where it is called. In particular
// "@every D" ticks at the instants k·D since 1970-01-01T00:00:00Z (robfig/cron's
// own @every counts from whenever it is asked, which would make each
// replica tick at different instants). Ticks fall on whole seconds.
//
// A spec's fields are matched against the wall clock of its location (UTC
// by default). time.Local, or TZ=Local, is each process's own zone: replicas
// configured with different local zones would disagree, so prefer a named
// zone. The zone data comes from the system (or time/tzdata if the binary
// embeds it); replicas should run with the same version of it.
//
// # Daylight saving time
//
// Where the location's UTC offset changes (DST, or any other change recorded
// in the tz database), some wall-clock times do not exist (a forward jump,
// "spring forward") and some occur twice (a backward jump, "fall back").
// Next follows the rules of Vixie cron, chosen by the hour field.
//
// Real time. If the hour field matches every hour ("*", "0-23", @hourly, and
// specs like "*/15 * * * *", "30 * * * *" or "0 */5 * * * *"), the schedule
// ticks at every instant whose wall-clock time matches:
//
//   - in a repeated hour it ticks in both passes;
//   - wall-clock times that do not exist never tick.
//
// Wall clock. Otherwise (fixed hours such as "30 2 * * *", "0 9-17 * * 1-5",
// "0 */2 * * *", and @daily, @weekly, @monthly, @yearly), every matching
// wall-clock time ticks exactly once:
//
//   - A time that occurs twice ticks at its first occurrence only. In
//     Europe/Berlin on 2026-10-25 the clock goes from 03:00 CEST back to
//     02:00 CET; "30 2 * * *" ticks at 02:30 CEST (00:30Z) and not at
//     02:30 CET (01:30Z).
//   - A time that does not exist ticks once at the instant the gap ends,
//     the first instant after the jump. In Europe/Berlin on 2026-03-29 the
//     clock goes from 02:00 CET to 03:00 CEST; "30 2 * * *" ticks at
//     03:00:00 CEST (01:00Z). All the skipped times of one gap share that
//     single tick, and if the schedule also matches the wall-clock time at
//     the end of the gap (03:00 here), that is the same tick: a tick is an
//     instant, and an instant never ticks twice.
//
// Unlike Vixie cron, which checks whether the hour field is spelled with a
// leading '*', the test is what the field matches: "0-23" counts as every
// hour and "*/2" does not. The day, month and weekday fields have no bearing
// on the choice.
//
// "@every D" is unaffected by time zones and DST.
//
// # Day of month and day of week
//
// A day matches when both day fields match it, except that when both are
// restricted a day matches if either does: "0 0 1,15 * MON" runs on the 1st,
// the 15th and every Monday. A day field counts as unrestricted when
// robfig/cron, which parses the fields, marks it as a star: "*", "?", "*/1",
// or a list containing one of them. "*/2" and "1-31" count as restricted.
//
// This is robfig/cron's rule, not Vixie cron's (nor cronie's, which keeps
// Vixie's): Vixie cron counts a day field as unrestricted when its text
// begins with '*'. So "0 0 */2 * MON" runs on Mondays with an odd date under
// Vixie cron, and here on odd dates and on Mondays. The two rules agree
// whenever a day field is exactly "*" or neither begins with '*' (and
// neither is a list with a '*' after its first element). `cronlock import
// crontab` converts crontab lines to specs with Vixie's meaning, or reports
// the lines that have none here.
//
// # Last, nearest weekday and nth weekday (Quartz's L, W and #)
//
// The day fields also take Quartz's forms, which robfig/cron does not:
//
//	day-of-month  L      the last day of the month      "0 9 L * *"
//	              L-3    three days before it (L-0..L-30) "0 9 L-3 * *"
//	              LW     the last weekday (Mon-Fri)     "0 18 LW * *"
//	              15W    the weekday nearest the 15th   "0 9 15W * *"
//	day-of-week   5L     the last Friday of the month   "0 9 ? * 5L", "FRIL"
//	              1#2    the second Monday (k 1..5)     "0 9 ? * 1#2", "MON#2"
//
// "nW" never leaves the month: if the nth is a Saturday it is the Friday
// before, except that "1W" on a Saturday the 1st is Monday the 3rd; if a
// Sunday, the Monday after, except on the month's last day, then the Friday
// before. A month without day n has no "nW" tick (as for the plain "n"), a
// month without a fifth Monday no "1#5" tick, and a February no "L-29".
// Weekdays are numbered as elsewhere (0 and 7 Sunday) or named, in any
// case. The forms may stand in a list with plain values ("L,15",
// "1#1,5L") but take no range or step. They count as restricted for the
// rule above: "0 9 L * 1" runs on the last day of the month and on every
// Monday; "0 9 L * *" and "0 9 ? * 5L" on the named days only.
//
// # Never-firing schedules and the search horizon
//
// Next looks at most five calendar years ahead (to the end of the fifth year
// after its argument's year) and returns the zero time if the spec has no
// tick there. A spec such as "0 0 30 2 *" has no tick at all; NeverFires
// reports it and Job.Validate rejects it. A spec that fires rarely can
// also have no tick within the horizon: "0 0 29 2 *" finds the next leap
// day from most instants, but asked between 2096-02-29 and the end of 2098
// Next returns the zero time, because 2100 is not a leap year and 2104 is
// beyond the horizon. The scheduler treats the zero time as "no further
// tick" for that job until it is reloaded or restarted.
package job
