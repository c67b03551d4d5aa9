package notify

import (
	"slices"
	"testing"

	"github.com/cronlock/cronlock/scheduler"
)

func TestEvents(t *testing.T) {
	t.Parallel()
	var none []string
	failure, missed := []string{EventFailure}, []string{EventMissed}
	success, recovered := []string{EventSuccess}, []string{EventRecovered, EventSuccess}
	tests := []struct {
		status, previous scheduler.RunStatus
		want             []string
	}{
		{scheduler.StatusFailed, "", failure},
		{scheduler.StatusTimeout, scheduler.StatusSucceeded, failure},
		{scheduler.StatusLost, scheduler.StatusFailed, failure},
		{scheduler.StatusAbandoned, "", failure},
		{scheduler.StatusMissed, scheduler.StatusSucceeded, missed},
		{scheduler.StatusMissed, scheduler.StatusMissed, missed},
		{scheduler.StatusSucceeded, "", success},
		{scheduler.StatusSucceeded, scheduler.StatusSucceeded, success},
		{scheduler.StatusSucceeded, scheduler.StatusRunning, success},
		{scheduler.StatusSucceeded, scheduler.StatusFailed, recovered},
		{scheduler.StatusSucceeded, scheduler.StatusTimeout, recovered},
		{scheduler.StatusSucceeded, scheduler.StatusLost, recovered},
		{scheduler.StatusSucceeded, scheduler.StatusAbandoned, recovered},
		{scheduler.StatusSucceeded, scheduler.StatusMissed, recovered},
		{scheduler.StatusSucceeded, scheduler.StatusCancelled, recovered},
		{scheduler.StatusSucceeded, "interrupted", recovered},
		{scheduler.StatusSucceeded, "something-new", success},
		{scheduler.StatusRunning, scheduler.StatusFailed, none},
		{scheduler.StatusCancelled, scheduler.StatusSucceeded, none},
		{"interrupted", scheduler.StatusSucceeded, none},
		{"", "", none},
		{"something-new", scheduler.StatusFailed, none},
	}
	for _, tt := range tests {
		if got := Events(tt.status, tt.previous); !slices.Equal(got, tt.want) {
			t.Errorf("Events(%q, %q) = %v, want %v", tt.status, tt.previous, got, tt.want)
		}
	}
}
