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
//   - CRON_TZ= (or TZ=) becomes the job's `timezone`. Without one cron ran the
//     entries in the host's local time, while cronlock reads schedules in
//     UTC: the output says so, and Options.Timezone fills the gap (also as
//     the job's TZ, since the host's zone was the command's local time).
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
// What it reports, line by line, with a hint: @reboot, the extensions of
// other crons that cronlock cannot parse (L, W, #, ?, a year field),
// malformed fields and environment lines, and '%' input for a shell that has
// no here-documents. The lines that convert are still converted.
//
// It owns the translation only: it knows cron's syntax and meaning and
// cronlock's config format, and nothing of NATS, locks or running jobs.
package crontab
