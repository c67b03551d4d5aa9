package scheduler

import (
	"math"
	"strings"
	"testing"
	"time"
)

// TestOptionsBounds: Options above their bounds are refused naming the
// field; the bounds themselves are accepted.
func TestOptionsBounds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		o    Options
		want string // "" for valid
	}{
		{Options{ShutdownGrace: 2562047 * time.Hour}, "Options.ShutdownGrace 2562047h0m0s: must be at most 24h0m0s"},
		{Options{ShutdownGrace: MaxShutdownGrace}, ""},
		{Options{HistorySize: 65}, "Options.HistorySize 65: must be at most 64"},
		{Options{HistorySize: MaxHistorySize}, ""},
		{Options{MaxConcurrentRuns: math.MaxInt}, "Options.MaxConcurrentRuns 9223372036854775807: must be at most 1000000"},
		{Options{MaxConcurrentRuns: MaxConcurrentRunsLimit}, ""},
	} {
		err := tc.o.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.o, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
	}
}
