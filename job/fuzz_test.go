package job

import (
	"strings"
	"testing"
	"time"
)

// FuzzParseSchedule checks that no spec panics ParseSchedule, and that the
// schedules it accepts honour Next's contract from any starting instant:
// strictly later or zero, and increasing along a chain of ticks.
func FuzzParseSchedule(f *testing.F) {
	for _, spec := range []string{
		"* * * * *", "0 */5 * * * *", "30 2 * * *", "@every 90s", "@daily",
		"CRON_TZ=Europe/Berlin 30 2 * * *", "TZ=America/New_York 0,30 1-2 * * *",
		"0 0 29 2 *", "0 0 30 2 *", "TZ=x", "TZ=UTC TZ=x",
		"0 9 L * *", "0 9 L-3,LW,15W * ?", "0 0 9 ? * 1#5,FRIL", "0 9 31W 2 *", "0 9 L-30 * 7L",
	} {
		f.Add(spec, int64(1774746000)) // 2026-03-29T01:00:00Z, Berlin's spring-forward
	}
	f.Fuzz(func(t *testing.T, spec string, unix int64) {
		s, err := ParseSchedule(spec, nil)
		if err != nil {
			if s != nil {
				t.Fatalf("ParseSchedule(%q) returned a schedule and an error", spec)
			}
			if !strings.HasPrefix(err.Error(), "schedule ") {
				t.Fatalf("ParseSchedule(%q) error %q does not name the spec", spec, err)
			}
			return
		}
		at := time.Unix(unix, 0)
		for i := range 5 {
			next := s.Next(at)
			if next.IsZero() {
				return
			}
			if !next.After(at) {
				t.Fatalf("%q: tick %d: Next(%v) = %v, not after it", spec, i, at, next)
			}
			if next.Nanosecond() != 0 {
				t.Fatalf("%q: Next(%v) = %v, not a whole second", spec, at, next)
			}
			at = next
		}
	})
}

// FuzzValidateName checks that no name panics ValidateName and that the
// names it accepts follow the rule.
func FuzzValidateName(f *testing.F) {
	for _, name := range []string{"a", "reports.daily", "a..b", ".a", "a.", "a b", "a*", "héllo", strings.Repeat("x", 201)} {
		f.Add(name)
	}
	f.Fuzz(func(t *testing.T, name string) {
		err := ValidateName(name)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "job name ") {
				t.Fatalf("ValidateName(%q) error %q does not name the name", name, err)
			}
			return
		}
		if len(name) < 1 || len(name) > MaxNameLen {
			t.Fatalf("ValidateName accepted %q of length %d", name, len(name))
		}
		for _, token := range strings.Split(name, ".") {
			if token == "" {
				t.Fatalf("ValidateName accepted %q with an empty token", name)
			}
			// Independent of nameByte: the allowed characters spelled out.
			const allowed = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
			if strings.Trim(token, allowed) != "" {
				t.Fatalf("ValidateName accepted %q with a token outside [A-Za-z0-9_-]", name)
			}
		}
	})
}
