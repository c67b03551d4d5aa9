package job

import (
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

func TestParseScheduleAccepts(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // a Thursday
	tests := []struct {
		spec string
		want time.Time // first tick after from
	}{
		{"* * * * *", from.Add(time.Minute)},
		{"*/15 * * * *", from.Add(15 * time.Minute)},
		{"30 2 * * *", time.Date(2026, 1, 1, 2, 30, 0, 0, time.UTC)},
		{"0 */5 * * * *", from.Add(5 * time.Minute)},
		{"15 * * * * *", from.Add(15 * time.Second)},
		{"* * * * * *", from.Add(time.Second)},
		{"  0 0 * * MON  ", time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)},
		{"0 0 1 jan,jul ?", time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)},
		{"0 9-17/4 * * 1-5", time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)},
		{"@yearly", time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"@annually", time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"@monthly", time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)},
		{"@weekly", time.Date(2026, 1, 4, 0, 0, 0, 0, time.UTC)},
		{"@daily", time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)},
		{"@midnight", time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)},
		{"@hourly", from.Add(time.Hour)},
		{"@every 90s", from.Add(90 * time.Second)}, // 1767225600 = 90·19635840
		{"@every 11s", from.Add(3 * time.Second)},  // 1767225600 = 11·160656872 + 8
		{"@every 1h", from.Add(time.Hour)},
		{"CRON_TZ=Europe/Berlin 0 9 * * *", time.Date(2026, 1, 1, 8, 0, 0, 0, time.UTC)},
		{"TZ=America/New_York 0 9 * * *", time.Date(2026, 1, 1, 14, 0, 0, 0, time.UTC)},
		{"TZ=Asia/Kolkata\t@daily", time.Date(2026, 1, 1, 18, 30, 0, 0, time.UTC)},
		{"TZ=UTC @every 1h", from.Add(time.Hour)},
		// Day-of-month and day-of-week both restricted: either matches.
		{"0 0 13 * 5", time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)},
		// One of them '*': both must match (Friday the 13th, Feb 2026).
		{"0 0 13 * *", time.Date(2026, 1, 13, 0, 0, 0, 0, time.UTC)},
		{"0 0 13/31 * 5", time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)},
	}
	for _, tc := range tests {
		s, err := ParseSchedule(tc.spec, nil)
		if err != nil {
			t.Errorf("ParseSchedule(%q) = %v", tc.spec, err)
			continue
		}
		if got := s.Next(from); !got.Equal(tc.want) {
			t.Errorf("ParseSchedule(%q).Next(%v) = %v, want %v", tc.spec, from, got, tc.want.UTC())
		}
	}
}

func TestParseScheduleLocation(t *testing.T) {
	t.Parallel()
	berlin := mustLoad(t, "Europe/Berlin")
	tokyo := mustLoad(t, "Asia/Tokyo")
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		spec string
		loc  *time.Location
		want time.Time
	}{
		{"0 9 * * *", nil, time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)},
		{"0 9 * * *", time.UTC, time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)},
		{"0 9 * * *", berlin, time.Date(2026, 1, 1, 8, 0, 0, 0, time.UTC)},
		{"CRON_TZ=Asia/Tokyo 0 9 * * *", berlin, time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)},
		{"TZ=Asia/Tokyo 0 9 * * *", berlin, time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)},
		{"0 9 * * *", time.FixedZone("X", -3*3600), time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)},
		{"@every 1h", tokyo, from.Add(time.Hour)}, // ignores the location
	}
	for _, tc := range tests {
		s, err := ParseSchedule(tc.spec, tc.loc)
		if err != nil {
			t.Fatalf("ParseSchedule(%q, %v) = %v", tc.spec, tc.loc, err)
		}
		got := s.Next(from)
		if !got.Equal(tc.want) {
			t.Errorf("ParseSchedule(%q, %v).Next = %v, want %v", tc.spec, tc.loc, got, tc.want)
		}
	}

	// The result is expressed in the schedule's location.
	s, _ := ParseSchedule("TZ=Asia/Tokyo 0 9 * * *", nil)
	if got := s.Next(from); got.Location().String() != "Asia/Tokyo" || got.Hour() != 9 {
		t.Errorf("Next = %v, want 09:00 in Asia/Tokyo", got)
	}
}

func TestParseScheduleErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		spec string
		want string // substring of the error, after the spec
	}{
		{"", "empty"},
		{"   ", "empty"},
		{"61 * * * *", "above maximum (59)"},
		{"* 24 * * *", "above maximum (23)"},
		{"0 0 0 * *", "below minimum (1)"},
		{"0 0 * 13 *", "above maximum (12)"},
		{"0 0 * * 7", "above maximum (6)"},
		{"5-1 * * * *", "beyond end of range"},
		{"*/0 * * * *", "step of range should be a positive number"},
		{"1-2-3 * * * *", "too many hyphens"},
		{"*/2/3 * * * *", "too many slashes"},
		{"-1 * * * *", "failed to parse int"},
		{"x * * * *", "failed to parse int"},
		{"* * * *", "expected 5 to 6 fields, found 4"},
		{"* * * * * * *", "expected 5 to 6 fields, found 7"},
		{"@often", "unrecognized descriptor"},
		{"@daily extra", "unrecognized descriptor"},
		{"@every", "want \"@every <duration>\""},
		{"@every 1s 2s", "want \"@every <duration>\""},
		{"@everyday", "want \"@every <duration>\""},
		{"@every banana", "@every: time: invalid duration"},
		{"@every 0s", "shorter than 1s"},
		{"@every -5s", "shorter than 1s"},
		{"@every 500ms", "shorter than 1s"},
		{"@every 1.5s", "not a whole number of seconds"},
		{"@every 1m30s1ms", "not a whole number of seconds"},
		{"TZ=", "empty time zone name"},
		{"TZ= * * * * *", "empty time zone name"},
		{"CRON_TZ=Mars/Olympus_Mons * * * * *", `time zone "Mars/Olympus_Mons"`},
		{"TZ=../../etc/passwd * * * * *", `time zone "../../etc/passwd"`},
		{"TZ=Europe/Berlin", `nothing after time zone "Europe/Berlin"`},
		{"TZ=Europe/Berlin   ", `nothing after time zone "Europe/Berlin"`},
		{"TZ=UTC TZ=UTC * * * * *", "more than one time zone prefix"},
		{"CRON_TZ=UTC TZ=x", "more than one time zone prefix"},
		{strings.Repeat("1,", 600) + "1 * * * *", "longer than 1024 bytes"},
	}
	for _, tc := range tests {
		s, err := ParseSchedule(tc.spec, nil)
		if err == nil {
			t.Errorf("ParseSchedule(%q) = %v, nil; want error containing %q", tc.spec, s, tc.want)
			continue
		}
		if s != nil {
			t.Errorf("ParseSchedule(%q) returned a schedule with its error", tc.spec)
		}
		msg := err.Error()
		prefix := "schedule " + quote(tc.spec) + ": "
		if !strings.HasPrefix(msg, prefix) || !strings.Contains(msg[len(prefix):], tc.want) {
			t.Errorf("ParseSchedule(%q) error = %q, want %q followed by something containing %q",
				tc.spec, msg, prefix, tc.want)
		}
	}
}

// TestNextMatchesRobfigInUTC cross-checks the field search against
// robfig/cron's own SpecSchedule.Next, which is correct where there is no
// DST. It walks several ticks from several starting points.
func TestNextMatchesRobfigInUTC(t *testing.T) {
	t.Parallel()
	specs := []string{
		"* * * * *", "*/7 * * * *", "59 23 * * *", "0 0 1 * *", "0 0 31 * *",
		"0 12 * * 0", "0 12 13 * 5", "0 12 13 * *", "30 4 1,15 * 1-5",
		"0 0 29 2 *", "0 0 1 1 *", "*/10 */3 * 2-4 *", "0 0 * * sat,sun",
		"17 */5 * * * *", "0 30 9 * * 1", "59 59 23 31 12 *", "1-10/3 * * * * *",
		"@hourly", "@daily", "@weekly", "@monthly", "@yearly",
	}
	starts := []time.Time{
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 2, 28, 23, 59, 59, 999999999, time.UTC),
		time.Date(2027, 12, 31, 23, 59, 30, 0, time.UTC),
		time.Date(2028, 2, 28, 12, 0, 0, 1, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(2099, 6, 15, 7, 7, 7, 0, time.UTC),
	}
	for _, spec := range specs {
		ours, err := ParseSchedule(spec, time.UTC)
		if err != nil {
			t.Fatal(err)
		}
		theirs, err := parser.Parse("TZ=UTC " + spec)
		if err != nil {
			t.Fatal(err)
		}
		for _, from := range starts {
			a, b := from, from
			for i := range 20 {
				a, b = ours.Next(a), theirs.Next(b)
				if !a.Equal(b) {
					t.Errorf("%q from %v, tick %d: got %v, robfig %v", spec, from, i, a, b)
					break
				}
			}
		}
	}
}

func TestNextNeverFires(t *testing.T) {
	t.Parallel()
	for _, spec := range []string{"0 0 30 2 *", "0 0 31 4,6,9,11 *", "0 0 31 2 *", "TZ=Europe/Berlin 0 0 30 2 *"} {
		s, err := ParseSchedule(spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if got := s.Next(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)); !got.IsZero() {
			t.Errorf("%q: Next = %v, want zero", spec, got)
		}
		if d := time.Since(start); d > 100*time.Millisecond {
			t.Errorf("%q: Next took %v", spec, d)
		}
	}
}

func TestNextLeapDay(t *testing.T) {
	t.Parallel()
	s, err := ParseSchedule("0 0 29 2 *", nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ from, want time.Time }{
		{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2028, 2, 29, 0, 0, 0, 0, time.UTC)},
		{time.Date(2028, 2, 29, 0, 0, 0, 0, time.UTC), time.Date(2032, 2, 29, 0, 0, 0, 0, time.UTC)},
		// 2100 is not a leap year: the next one is 8 years away, beyond the
		// search horizon.
		{time.Date(2096, 3, 1, 0, 0, 0, 0, time.UTC), time.Time{}},
		{time.Date(2099, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2104, 2, 29, 0, 0, 0, 0, time.UTC)},
	}
	for _, tc := range tests {
		if got := s.Next(tc.from); !got.Equal(tc.want) {
			t.Errorf("Next(%v) = %v, want %v", tc.from, got, tc.want)
		}
	}
}

// TestNextStrictlyAfter checks that a tick instant itself, and instants a
// nanosecond around it, move on correctly.
func TestNextStrictlyAfter(t *testing.T) {
	t.Parallel()
	for _, spec := range []string{"0 */5 * * * *", "@every 300s", "TZ=Europe/Berlin */5 * * * *"} {
		s, err := ParseSchedule(spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		tick := time.Date(2026, 5, 5, 10, 5, 0, 0, time.UTC)
		for _, tc := range []struct{ from, want time.Time }{
			{tick.Add(-time.Nanosecond), tick},
			{tick, tick.Add(5 * time.Minute)},
			{tick.Add(time.Nanosecond), tick.Add(5 * time.Minute)},
			{tick.Add(5*time.Minute - time.Nanosecond), tick.Add(5 * time.Minute)},
		} {
			if got := s.Next(tc.from); !got.Equal(tc.want) {
				t.Errorf("%q: Next(%v) = %v, want %v", spec, tc.from, got, tc.want)
			}
		}
	}
}

func TestNextOutOfRange(t *testing.T) {
	t.Parallel()
	s, err := ParseSchedule("* * * * *", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, from := range []time.Time{
		time.Unix(1<<62, 0), time.Unix(-1<<62, 0), {}, time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
	} {
		if got := s.Next(from); !got.IsZero() && !got.After(from) {
			t.Errorf("Next(%v) = %v, want zero or later", from, got)
		}
	}
}

func mustLoad(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func fieldsOfSchedule(t *testing.T, s cron.Schedule) fields {
	t.Helper()
	spec, ok := s.(*cron.SpecSchedule)
	if !ok {
		t.Fatalf("%T is not a *cron.SpecSchedule", s)
	}
	return fieldsOf(spec)
}
