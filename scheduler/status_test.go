package scheduler

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/cronlock/cronlock/lock"
)

func TestRunStatus(t *testing.T) {
	t.Parallel()
	failed := errors.New("exit status 1")
	timedOut := fmt.Errorf("%w after 1s: %w", errTimeout, context.Canceled)
	for _, c := range []struct {
		name    string
		err     error
		cause   error
		stopped bool
		want    RunStatus
	}{
		{"success", nil, nil, false, StatusSucceeded},
		{"success despite a stop", nil, context.Canceled, true, StatusSucceeded},
		{"failure", failed, nil, false, StatusFailed},
		{"timeout", timedOut, nil, false, StatusTimeout},
		{"lease lost", failed, lock.ErrLeaseLost, false, StatusLost},
		{"lease lost during a shutdown", failed, lock.ErrLeaseLost, true, StatusLost},
		{"shutdown", failed, context.Canceled, true, StatusCancelled},
		{"timeout during a shutdown", timedOut, context.Canceled, true, StatusCancelled},
	} {
		if got := runStatus(c.err, c.cause, c.stopped); got != c.want {
			t.Errorf("%s: runStatus = %q, want %q", c.name, got, c.want)
		}
	}
}

// TestRunStatusFailures: which statuses are failures, and which are finished
// runs that did not succeed (a success after one is a recovery), is written
// once on RunStatus; Run.Failed and the notifications use it.
func TestRunStatusFailures(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		status               RunStatus
		failed, notSucceeded bool
	}{
		{StatusFailed, true, true},
		{StatusTimeout, true, true},
		{StatusLost, true, true},
		{StatusAbandoned, true, true},
		{StatusMissed, false, true},
		{StatusCancelled, false, true},
		{StatusInterrupted, false, true},
		{StatusSucceeded, false, false},
		{StatusRunning, false, false},
		{StatusSkipped, false, false},
		{StatusAnomaly, false, false},
		{"", false, false},
		{"something-new", false, false},
	} {
		if got := c.status.Failed(); got != c.failed {
			t.Errorf("%q.Failed() = %v, want %v", c.status, got, c.failed)
		}
		if got := (Run{Status: c.status}).Failed(); got != c.failed {
			t.Errorf("Run{Status: %q}.Failed() = %v, want %v", c.status, got, c.failed)
		}
		if got := c.status.NotSucceeded(); got != c.notSucceeded {
			t.Errorf("%q.NotSucceeded() = %v, want %v", c.status, got, c.notSucceeded)
		}
	}
}
