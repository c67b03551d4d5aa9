package job

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// calendarReference lists the ticks in (from, to] of a job with these
// specs, excluded dates and window the slow way: each spec's ticks by the
// minute-by-minute scan of referenceTicks (or, in UTC, hour by hour: the
// UTC cases' specs have minute 0, and a scan of years by the minute took
// seconds under -race), merged into one sorted list
// without repeats, then filtered by the excluded days (read in loc) and
// the window.
func calendarReference(t *testing.T, j Job, from, to time.Time) []time.Time {
	t.Helper()
	seen := map[int64]bool{}
	var all []time.Time
	for _, spec := range j.specs() {
		ticks := referenceTicks
		if j.Location == time.UTC {
			ticks = hourlyUTCTicks
		}
		for _, u := range ticks(t, spec, j.Location, from, to) {
			if !seen[u.Unix()] {
				seen[u.Unix()] = true
				all = append(all, u)
			}
		}
	}
	slices.SortFunc(all, func(a, b time.Time) int { return a.Compare(b) })
	excluded := map[string]bool{}
	for _, d := range j.cal().ExcludeDates {
		excluded[d.String()] = true
	}
	var out []time.Time
	for _, u := range all {
		if excluded[u.In(j.Location).Format(dateLayout)] ||
			(!j.cal().StartAt.IsZero() && u.Before(j.cal().StartAt)) || (!j.cal().EndAt.IsZero() && u.After(j.cal().EndAt)) {
			continue
		}
		out = append(out, u)
	}
	return out
}

// hourlyUTCTicks lists the ticks in (from, to] of a spec with minute and
// second 0 in UTC by testing every whole hour against the spec's fields.
func hourlyUTCTicks(t *testing.T, spec string, _ *time.Location, from, to time.Time) []time.Time {
	t.Helper()
	parsed, err := parser.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	f := fieldsOfSchedule(t, parsed)
	var out []time.Time
	for u := from.Truncate(time.Hour).Add(time.Hour); !u.After(to); u = u.Add(time.Hour) {
		if f.minute&1 != 0 && f.second&1 != 0 && f.hour&(1<<u.Hour()) != 0 &&
			f.month&(1<<u.Month()) != 0 && f.dayMatches(int64(u.Day()), int64(u.Weekday()), 0, 0) {
			out = append(out, u)
		}
	}
	return out
}

// stepTicks lists s's ticks in (from, to] by stepping Next.
func stepTicks(s Schedule, from, to time.Time) []time.Time {
	var got []time.Time
	for at := s.Next(from); !at.IsZero() && !at.After(to); at = s.Next(at) {
		got = append(got, at)
	}
	return got
}

func dates(t *testing.T, ds ...string) []Date {
	t.Helper()
	out := make([]Date, len(ds))
	for i, s := range ds {
		d, err := ParseDate(s)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = d
	}
	return out
}

func TestCalendarAgainstReference(t *testing.T) {
	t.Parallel()
	berlin := mustLoad(t, "Europe/Berlin")
	berlinSpecs := []string{"30 2 * * *", "0 */2 * * *", "*/20 1-3 * * 0", "0 2 * * *"}
	cases := []struct {
		name     string
		job      Job
		from, to time.Time
	}{{
		// Leap days, Mondays and firsts of the month share instants (a
		// Monday the 1st at 12:00); four years and a half, two leap years.
		name: "utc-years",
		job: Job{Location: time.UTC, Calendar: &Calendar{Schedules: []string{"0 12 29 2 *", "0 12 * * 1", "0 0,12 1 * *"},
			ExcludeDates: dates(t, "2028-02-29", "2027-03-01", "2026-06-01", "2029-01-01")}},
		from: time.Date(2025, 12, 31, 0, 0, 0, 0, time.UTC), to: time.Date(2030, 6, 30, 0, 0, 0, 0, time.UTC),
	}, {
		// Berlin's spring transition, an excluded day, in a window that
		// starts in the middle of a day.
		name: "berlin-spring",
		job: Job{Location: berlin, Calendar: &Calendar{Schedules: berlinSpecs, ExcludeDates: dates(t, "2026-03-29", "2026-03-15"),
			StartAt: time.Date(2026, 3, 10, 13, 0, 0, 0, time.UTC)}},
		from: time.Date(2026, 3, 1, 0, 0, 0, 0, berlin), to: time.Date(2026, 4, 5, 0, 0, 0, 0, berlin),
	}, {
		// The autumn transition (not excluded: its repeated hour), and a
		// window that ends in the middle of a day.
		name: "berlin-autumn",
		job: Job{Location: berlin, Calendar: &Calendar{Schedules: berlinSpecs, ExcludeDates: dates(t, "2026-12-25", "2026-12-26", "2026-11-01"),
			EndAt: time.Date(2026, 12, 30, 10, 30, 0, 0, berlin)}},
		from: time.Date(2026, 10, 20, 0, 0, 0, 0, berlin), to: time.Date(2027, 1, 1, 0, 0, 0, 0, berlin),
	}, {
		name: "single-spec-window",
		job: Job{Schedule: "0 */6 * * *", Location: berlin, Calendar: &Calendar{
			StartAt: time.Date(2026, 10, 24, 0, 0, 0, 0, berlin), ExcludeDates: dates(t, "2026-10-26")}},
		from: time.Date(2026, 10, 1, 0, 0, 0, 0, berlin), to: time.Date(2026, 11, 2, 0, 0, 0, 0, berlin),
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s, err := c.job.ParsedSchedule()
			if err != nil {
				t.Fatal(err)
			}
			got, want := stepTicks(s, c.from, c.to), calendarReference(t, c.job, c.from, c.to)
			if len(want) == 0 {
				t.Fatal("the reference has no ticks: the case tests nothing")
			}
			if fmt.Sprint(utcAll(got)) != fmt.Sprint(utcAll(want)) {
				t.Errorf("%d ticks, want %d:\n got %v\nwant %v", len(got), len(want), utcAll(got), utcAll(want))
			}
		})
	}
}

// TestCalendarSecondsAgainstReference checks a union of 6-field specs second
// by second over two days, the second of them excluded but for the window.
func TestCalendarSecondsAgainstReference(t *testing.T) {
	t.Parallel()
	j := Job{Location: time.UTC, Calendar: &Calendar{Schedules: []string{"*/2 * * * * *", "*/3 * * * * *", "*/3 * * * * *"},
		ExcludeDates: dates(t, "2026-03-02"),
		StartAt:      time.Date(2026, 3, 1, 23, 0, 0, 0, time.UTC), EndAt: time.Date(2026, 3, 3, 0, 30, 0, 0, time.UTC)}}
	s, err := j.ParsedSchedule()
	if err != nil {
		t.Fatal(err)
	}
	from, to := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 3, 1, 0, 0, 0, time.UTC)
	var want []time.Time
	for u := from.Add(time.Second); !u.After(to); u = u.Add(time.Second) {
		if sec := u.Second(); (sec%2 == 0 || sec%3 == 0) && u.Day() != 2 && !u.Before(j.cal().StartAt) && !u.After(j.cal().EndAt) {
			want = append(want, u)
		}
	}
	got := stepTicks(s, from, to)
	if !slices.EqualFunc(got, want, time.Time.Equal) {
		t.Errorf("%d ticks, want %d; first got %v, want %v", len(got), len(want), utcAll(got[:min(5, len(got))]), utcAll(want[:5]))
	}
}

func TestCalendarBounds(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	j := Job{Schedule: "0 12 * * *", Calendar: &Calendar{StartAt: start, EndAt: start.Add(48 * time.Hour)}}
	s, err := j.ParsedSchedule()
	if err != nil {
		t.Fatal(err)
	}
	got := stepTicks(s, start.Add(-72*time.Hour), start.Add(72*time.Hour))
	want := []time.Time{start, start.Add(24 * time.Hour), start.Add(48 * time.Hour)}
	if !slices.EqualFunc(got, want, time.Time.Equal) {
		t.Errorf("ticks %v, want both bounds and the day between: %v", utcAll(got), utcAll(want))
	}
	if !s.Next(start.Add(48 * time.Hour)).IsZero() {
		t.Error("a tick after end_at")
	}
	if !j.Ended(start.Add(49*time.Hour)) || j.Ended(start) {
		t.Error("Ended is wrong")
	}
}

func TestCalendarExcludedYears(t *testing.T) {
	t.Parallel()
	// Every day of 2026 and 2027 excluded: Next jumps a day at a time,
	// and finds 2028's first tick.
	var ds []Date
	for d := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC); d.Year() < 2028; d = d.AddDate(0, 0, 1) {
		ds = append(ds, Date{d.Year(), d.Month(), d.Day()})
	}
	j := Job{Schedule: "*/10 * * * * *", Calendar: &Calendar{ExcludeDates: ds}}
	s, err := j.ParsedSchedule()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Next(time.Date(2025, 12, 31, 23, 59, 59, 0, time.UTC)), time.Date(2028, 1, 1, 0, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("Next = %v, want %v", got, want)
	}
}

func TestParseDate(t *testing.T) {
	t.Parallel()
	if d, err := ParseDate("2028-02-29"); err != nil || d != (Date{2028, time.February, 29}) || d.String() != "2028-02-29" {
		t.Errorf("ParseDate(2028-02-29) = %v, %v", d, err)
	}
	for _, bad := range []string{"", "2026-02-29", "2026-2-1", "2026-13-01", "26-01-01", "2026-01-01T00:00:00Z", "2026/01/01", " 2026-01-01"} {
		if _, err := ParseDate(bad); err == nil {
			t.Errorf("ParseDate(%q) accepted", bad)
		}
	}
}

func TestCalendarValidateErrors(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	many := make([]string, MaxSchedules+1)
	for i := range many {
		many[i] = "@hourly"
	}
	cases := []struct {
		name string
		edit func(*Job)
		want string
	}{
		{"both", func(j *Job) { calOf(j).Schedules = []string{"@daily"} }, `job "reports.daily": schedules: schedule and schedules are mutually exclusive`},
		{"bad spec", func(j *Job) { j.Schedule, calOf(j).Schedules = "", []string{"@daily", "61 * * * *"} }, `job "reports.daily": schedules[1]: schedule "61 * * * *"`},
		{"too many", func(j *Job) { j.Schedule, calOf(j).Schedules = "", many }, "schedules: at most 100 specs, got 101"},
		{"never", func(j *Job) { j.Schedule, calOf(j).Schedules = "", []string{"0 0 30 2 *", "0 0 31 4 *"} }, `schedule "0 0 30 2 * | 0 0 31 4 *" never fires`},
		{"bad date", func(j *Job) { calOf(j).ExcludeDates = []Date{{2026, 2, 29}} }, "excludeDates[0]: 2026-02-29 is not an existing date"},
		{"end before start", func(j *Job) { calOf(j).StartAt, calOf(j).EndAt = start, start }, "endAt: must be after startAt (2026-05-01T12:00:00Z), got 2026-05-01T12:00:00Z"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := validJob()
			c.edit(&j)
			err := j.Validate()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Validate() = %v, want it to contain %q", err, c.want)
			}
		})
	}
	// A job that has ended is valid, and so is a union with one spec that
	// never fires.
	j := validJob()
	calOf(&j).EndAt = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	j.Schedule, calOf(&j).Schedules = "", []string{"0 0 30 2 *", "@daily"}
	if err := j.Validate(); err != nil {
		t.Errorf("Validate() = %v, want nil", err)
	}
}

func TestScheduleKeyAndSpec(t *testing.T) {
	t.Parallel()
	plain := Job{Schedule: "*/5 * * * *"}
	if plain.ScheduleKey() != "*/5 * * * *" || plain.Spec() != "*/5 * * * *" {
		t.Errorf("plain job: key %q, spec %q", plain.ScheduleKey(), plain.Spec())
	}
	union := Job{Calendar: &Calendar{Schedules: []string{"@daily", "@hourly"}}}
	if union.Spec() != "@daily | @hourly" {
		t.Errorf("Spec() = %q", union.Spec())
	}
	excl := plain
	excl.Calendar = &Calendar{ExcludeDates: dates(t, "2026-12-25")}
	windowed := plain
	windowed.Calendar = &Calendar{EndAt: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)}
	keys := map[string]bool{}
	for _, j := range []Job{plain, union, excl, windowed, {Calendar: &Calendar{Schedules: []string{"@daily | @hourly"}}}} {
		keys[j.ScheduleKey()] = true
	}
	if len(keys) != 5 {
		t.Errorf("jobs with different ticks share a key: %v", keys)
	}
}

// calOf is j's Calendar, made if it has none, for tests that set one field.
func calOf(j *Job) *Calendar {
	if j.Calendar == nil {
		j.Calendar = &Calendar{}
	}
	return j.Calendar
}
