package job

import (
	"math"
	"testing"
	"time"
)

func TestEveryIsEpochAligned(t *testing.T) {
	t.Parallel()
	tests := []struct {
		spec string
		from time.Time
		want time.Time
	}{
		{"@every 1s", time.Unix(100, 5), time.Unix(101, 0)},
		{"@every 1s", time.Unix(100, 0), time.Unix(101, 0)},
		{"@every 7s", time.Unix(0, 0), time.Unix(7, 0)},
		{"@every 7s", time.Unix(13, 999999999), time.Unix(14, 0)},
		{"@every 7s", time.Unix(14, 0), time.Unix(21, 0)},
		{"@every 90s", time.Unix(1000, 0), time.Unix(1080, 0)},
		{"@every 1h30m", time.Date(2026, 7, 1, 12, 10, 0, 0, time.UTC), time.Date(2026, 7, 1, 13, 30, 0, 0, time.UTC)},
		{"@every 24h", time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC), time.Date(2026, 7, 2, 0, 0, 0, 0, time.UTC)},
		// Before the epoch, k is negative.
		{"@every 7s", time.Unix(-1, 0), time.Unix(0, 0)},
		{"@every 7s", time.Unix(-7, 0), time.Unix(0, 0)},
		{"@every 7s", time.Unix(-8, 0), time.Unix(-7, 0)},
		{"@every 7s", time.Unix(-8, 1), time.Unix(-7, 0)},
		// No overflow at the far end of time.
		{"@every 1s", time.Unix(math.MaxInt64, 0), time.Time{}},
		{"@every 10s", time.Unix(math.MaxInt64-5, 0), time.Time{}},
		{"@every 1s", time.Unix(math.MinInt64, 0), time.Unix(math.MinInt64+1, 0)},
	}
	for _, tc := range tests {
		s, err := ParseSchedule(tc.spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Next(tc.from); !got.Equal(tc.want) {
			t.Errorf("%q: Next(%v) = %v, want %v", tc.spec, tc.from, got, tc.want)
		}
	}
}

// TestEveryAgreesAcrossProcesses models two replicas that parsed the spec at
// different moments and ask from different instants: their tick sequences
// coincide wherever they overlap.
func TestEveryAgreesAcrossProcesses(t *testing.T) {
	t.Parallel()
	a, err := ParseSchedule("@every 90s", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ParseSchedule("@every 90s", mustLoad(t, "Asia/Tokyo"))
	if err != nil {
		t.Fatal(err)
	}
	ta := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	tb := ta.Add(37*time.Second + 123*time.Millisecond)
	ticksA := map[int64]bool{}
	for range 100 {
		ta = a.Next(ta)
		ticksA[ta.Unix()] = true
	}
	for range 90 {
		tb = b.Next(tb)
		if !ticksA[tb.Unix()] {
			t.Fatalf("replica B ticks at %v, which replica A never does", tb)
		}
		if tb.Unix()%90 != 0 {
			t.Fatalf("tick %v is not a multiple of 90s since the epoch", tb)
		}
	}
}

func TestEveryIgnoresDST(t *testing.T) {
	t.Parallel()
	s, err := ParseSchedule("CRON_TZ=Europe/Berlin @every 1h", nil)
	if err != nil {
		t.Fatal(err)
	}
	// Across both 2026 transitions, ticks stay exactly one hour apart.
	for _, from := range []time.Time{
		time.Date(2026, 3, 28, 22, 0, 0, 0, time.UTC),
		time.Date(2026, 10, 24, 22, 0, 0, 0, time.UTC),
	} {
		prev := from
		for range 6 {
			next := s.Next(prev)
			if d := next.Sub(prev); d != time.Hour {
				t.Errorf("from %v: tick %v is %v after %v", from, next, d, prev)
			}
			prev = next
		}
	}
}
