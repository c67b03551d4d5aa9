// Package job defines what cronlock schedules: a Job (a name, a cron
// schedule and a function), the Schedule that yields its ticks, and the
// RunInfo a running job can read from its context.
package job
