package main

import (
	"time"

	"github.com/cronlock/cronlock/job"
)

// dueSeconds are the Unix seconds in [from, to) at which schedule falls
// due: every second of it for the default "* * * * * *", one in ten for
// "*/10 * * * * *" (a burst of every job at once). A schedule that does not
// parse counts every second, as the bench always did.
func dueSeconds(schedule string, from, to time.Time) []int64 {
	var out []int64
	sched, err := job.Job{Schedule: schedule}.ParsedSchedule()
	if err != nil {
		for t := from; t.Before(to); t = t.Add(time.Second) {
			out = append(out, t.Unix())
		}
		return out
	}
	for t := sched.Next(from.Add(-time.Nanosecond)); !t.IsZero() && t.Before(to); t = sched.Next(t) {
		out = append(out, t.Unix())
	}
	return out
}
