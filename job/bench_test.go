package job

import (
	"testing"
	"time"
)

// BenchmarkNext measures Next as the scheduler uses it: once per job per
// second, from the current instant. The starting instants advance by one
// second per iteration so that the search does not always hit the same
// path.
func BenchmarkNext(b *testing.B) {
	for _, bc := range []struct{ name, spec string }{
		{"6-field", "0 */5 * * * *"},
		{"6-field-Berlin", "CRON_TZ=Europe/Berlin 0 */5 * * * *"},
		{"5-field-fixed-hour-Berlin", "CRON_TZ=Europe/Berlin 30 2 * * 1-5"},
		{"every", "@every 90s"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s, err := ParseSchedule(bc.spec, nil)
			if err != nil {
				b.Fatal(err)
			}
			at := time.Date(2026, 5, 5, 10, 0, 0, 0, time.UTC)
			b.ReportAllocs()
			for b.Loop() {
				if s.Next(at).IsZero() {
					b.Fatal("zero tick")
				}
				at = at.Add(time.Second)
			}
		})
	}
}
