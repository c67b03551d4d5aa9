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
		want    string
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
