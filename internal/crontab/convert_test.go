package crontab

import (
	"strings"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/config"
	"github.com/cronlock/cronlock/job"
)

// The comparison window: a year, minute by minute, with a February 29.
var (
	windowFrom = time.Date(2027, 6, 1, 0, 0, 0, 0, time.UTC)
	windowTo   = time.Date(2028, 6, 1, 0, 0, 0, 0, time.UTC)
)

// convertOne converts a crontab expected to give exactly one job, loads the
// output with the configuration loader, and returns the job.
func convertOne(t *testing.T, tab string, opt Options) config.Job {
	t.Helper()
	res, err := Convert([]byte(tab), opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) > 0 || res.Jobs != 1 {
		t.Fatalf("crontab %q: %d jobs, errors %v", tab, res.Jobs, res.Errors)
	}
	cfg, err := config.Parse("out.yaml", res.YAML)
	if err != nil {
		t.Fatalf("output does not load: %v\n%s", err, res.YAML)
	}
	return cfg.Jobs[0]
}

// firstDifference compares the ticks of s with the minutes cron runs v in
// loc over the window, and describes the first difference ("" if none).
func firstDifference(s job.Schedule, v vixie, loc *time.Location) string {
	next := s.Next(windowFrom.Add(-time.Second))
	for m := windowFrom; m.Before(windowTo); m = m.Add(time.Minute) {
		want := v.matches(m.In(loc))
		got := next.Equal(m)
		if got {
			next = s.Next(next)
		}
		if want != got {
			return "at " + m.In(loc).Format(time.RFC3339) + " cron runs: " + yes(want) + ", cronlock runs: " + yes(got)
		}
	}
	if !next.IsZero() && next.Before(windowTo) {
		return "cronlock ticks off the minute at " + next.Format(time.RFC3339)
	}
	return ""
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// TestConvertedTimesMatchVixie: for every converted line, the schedule
// cronlock loads from the output ticks exactly at the minutes Vixie cron
// runs the line, over a year, including the day-of-month/day-of-week rule.
func TestConvertedTimesMatchVixie(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ zone, spec string }{
		{"", "0 0 1,15 * MON"},      // either day (neither field begins with '*')
		{"", "30 4 1-7 * fri"},      // either day, lower-case name
		{"", "0 0 */2 * *"},         // odd dates
		{"", "0 0 * * */2"},         // Sun, Tue, Thu, Sat
		{"", "0 0 */1 * MON"},       // '*'-field matches all: Mondays
		{"", "0 0 1-31 * MON"},      // either day, one of them every day: daily
		{"", "0 0 1,* * MON"},       // Vixie: no leading '*', so either day: daily
		{"", "0 0 1 * 1-7"},         // 1-7 is every weekday: daily
		{"", "0 12 * * 7"},          // 7 is Sunday
		{"", "15 10 * * 5-7"},       // Fri-Sun
		{"", "15 10 * * 0,7"},       // Sunday twice
		{"", "0 12 13 * 5"},         // the 13th or Fridays
		{"", "0 0 * * sun-sat"},     // daily
		{"", "5 */4 * jan,JUL *"},   // names in lists
		{"", "0 9 * * 1-5"},         // weekdays
		{"", "*/7 * * * *"},         // steps restart each hour
		{"", "0-10/3 8-20/4 * * *"}, // stepped ranges
		{"", "0 0 29 2 *"},          // leap day
		{"", "0 0 * */2 *"},         // odd months
		{"", "30 1 * * Tue,thu"},    // mixed case
		{"", "59 23 31 * *"},        // months with a 31st
		{"", "* * * * *"},
		{"", "@yearly"}, {"", "@annually"}, {"", "@monthly"}, {"", "@weekly"},
		{"", "@daily"}, {"", "@midnight"}, {"", "@hourly"},
		{"Asia/Kolkata", "0 9 * * *"}, // a half-hour offset
		{"Asia/Tokyo", "0 0 1,15 * MON"},
	} {
		t.Run(tc.zone+" "+tc.spec, func(t *testing.T) {
			t.Parallel()
			tab := tc.spec + " echo hi\n"
			loc := time.UTC
			if tc.zone != "" {
				tab = "CRON_TZ=" + tc.zone + "\n" + tab
				loc, _ = time.LoadLocation(tc.zone)
			}
			j := convertOne(t, tab, Options{})
			s, err := job.ParseSchedule(j.Schedule, j.Location)
			if err != nil {
				t.Fatal(err)
			}
			if d := firstDifference(s, parseVixie(tc.spec), loc); d != "" {
				t.Errorf("%q converted to %q: %s", tc.spec, j.Schedule, d)
			}
		})
	}
}

// TestDayRuleReported: a line whose meaning under Vixie's day rule has no
// cronlock spec is reported, and reading it as cronlock would (the fields
// unchanged) indeed runs at other times.
func TestDayRuleReported(t *testing.T) {
	t.Parallel()
	for _, spec := range []string{"0 0 */2 * MON", "0 0 */10 * 1-5", "0 0 1-15 * */2", "0 0 */2 * */3"} {
		res, err := Convert([]byte(spec+" echo hi\n"), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Jobs != 0 || len(res.Errors) != 1 {
			t.Fatalf("%q: %d jobs, errors %v; want it reported", spec, res.Jobs, res.Errors)
		}
		msg := res.Errors[0].Error()
		for _, w := range []string{"crontab:1: ", "only on days that match both", "(hint: "} {
			if !strings.Contains(msg, w) {
				t.Errorf("%q: error %q lacks %q", spec, msg, w)
			}
		}
		naive, err := job.ParseSchedule(spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		if firstDifference(naive, parseVixie(spec), time.UTC) == "" {
			t.Errorf("%q: cronlock reads it as cron does; reporting it is needless", spec)
		}
	}
}
