// Package crontab converts a crontab (a user's crontab, or /etc/crontab with
// its user field) into a cronlock YAML configuration, keeping what each line
// means under Vixie cron and cronie, or reporting the lines it cannot keep.
//
// What it converts:
//
//   - Each cron entry becomes one job with a `shell:` command line, or, when
//     the crontab set SHELL, `command: [SHELL, -c, line]`.
//   - NAME=value lines become the `env` of the entries after them, as cron
//     passes them to those entries (quotes around the value are removed).
//   - CRON_TZ= becomes the job's `timezone`. TZ= does not: as under cronie
//     it is an environment variable of the job (the command's local time)
//     and does not move the schedule, so it stays in the job's env. Without
//     CRON_TZ cron ran the entries in the host's local time, while cronlock
//     reads schedules in UTC: the output says so, and Options.Timezone
//     fills the gap (also as the job's TZ where the crontab sets none,
//     since the host's zone was the command's local time).
//   - Every string written (names, schedules, zones, commands, env names
//     and values) is a double-quoted YAML scalar, so that none reads as a
//     boolean, number or null: a job named "true" stays a string.
//   - A crontab with a user field (/etc/crontab, /etc/cron.d/*) converts
//     with Options.System only; without it Convert refuses it with a
//     *SystemFormatError rather than naming jobs after the user.
//   - Host-local maintenance (logrotate, certbot, run-parts, apt, a find
//     that deletes in /tmp, ...) converts, with a comment and a LineNote:
//     cronlock runs each tick on one replica, while the crontab ran it on
//     every host that had it.
//   - '%' keeps its cron meaning: the first unescaped '%' ends the command,
//     the rest is its standard input with every further '%' a newline, and
//     "\%" is a literal '%'. The input becomes a here-document.
//   - @yearly, @annually, @monthly, @weekly, @daily, @midnight and @hourly
//     are kept; month and weekday names, ranges, lists, steps and 7 for
//     Sunday are rewritten where robfig/cron (which cronlock uses to parse
//     specs) reads them differently.
//
// The day rule. Vixie cron treats a day field whose text begins with '*'
// (such as "*/2") as unrestricted when it decides between "both day fields
// must match" and "either may": "0 0 */2 * MON" runs on Mondays with an odd
// date. cronlock's schedules (package job) read "*/2" as restricted and would
// run on odd dates or Mondays. A converted spec always has Vixie's meaning:
// where one day field matches every day it is written as "*", and where both
// remain restricted under Vixie's "both must match" the line is reported,
// because no cronlock spec expresses it.
//
// Quartz's day forms, which some crons have, convert as written: L, L-3,
// LW, 15W in the day-of-month and 5L, 1#2 in the day-of-week, when the
// other day field is "*" or "?" (a lone "?" in a day field becomes "*").
//
// What it reports, line by line, with a hint: @reboot, the extensions of
// other crons that cronlock cannot parse (~, H, ? in a list, L, W or #
// beside a restricted other day field, a year field),
// malformed fields and environment lines, and '%' input for a shell that has
// no here-documents. The lines that convert are still converted.
//
// It owns the translation only: it knows cron's syntax and meaning and
// cronlock's config format, and nothing of NATS, locks or running jobs.
package crontab
