package scheduler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cronlock/cronlock/internal/history"
)

// Cancelling a run is a request written into the job's record, beside the
// hold it is for: history.CancelRequest names the hold's lease, and history.CancelHeader
// carries that lease to every replica's headers-only watch. The replica
// holding that lease cancels the run's context when its watch delivers the
// request (within a delivery, milliseconds), so the run stops wherever it
// runs without any replica addressing another. The result's write, which
// frees the hold, drops the request; so does any write that finds the
// request naming a hold the record no longer has (see dropStaleCancel).
// A replica of a release that knows no cancel requests ignores them.

// ReasonReplaced: a cancelled run that a newer tick of an overlap: replace
// job stopped (Run.Reason).
const ReasonReplaced Reason = "replaced"

// ErrNotRunning: Cancel of a job that has no run in progress (or none of
// the tick asked for).
var ErrNotRunning = errors.New("not running")

// ErrSeveralRunning: Cancel without a tick of a job with several runs in
// progress (overlap allow): say which.
var ErrSeveralRunning = errors.New("several runs in progress")

// CancelledError is the cause of a run's context cancelled by a cancel
// request (History.Cancel, an overlap: replace tick).
type CancelledError struct {
	By     string
	Reason Reason // ReasonReplaced, or empty for an operator's cancel
}

func (e *CancelledError) Error() string {
	if e.Reason == ReasonReplaced {
		return "cancelled: replaced by a newer tick (" + e.By + ")"
	}
	return "cancelled by " + e.By
}

// CancelOptions configure History.Cancel. Zero values select the defaults.
type CancelOptions struct {
	// By names who cancels, for the record and the log. Default
	// "operator".
	By string
	// Tick, if set, cancels only a run of that tick.
	Tick time.Time
}

// defaultCancelBy is CancelOptions.By's default.
const defaultCancelBy = "operator"

// Cancel asks the job's running run to stop and returns it. The replica
// running it cancels its context within a watch delivery (a command gets
// SIGTERM, then SIGKILL after its grace) and records it cancelled with
// By, without retry or rerun; the result's write frees the lock. It fails
// with an error matching ErrNotRunning when no run holds the job's lock
// (or, with Tick, none of that tick). A second request for the same run
// writes nothing and returns the run again. Await the end with AwaitRun.
func (h *History) Cancel(ctx context.Context, name string, o CancelOptions) (Run, error) {
	if err := ValidateRecord(name); err != nil {
		return Run{}, err
	}
	if o.By == "" {
		o.By = defaultCancelBy
	}
	var run Run
	var found bool
	var several []Run
	_, _, err := h.update(ctx, name, nil, 0, func(st *history.Record) bool {
		var lease string
		run, lease, several = cancelTarget(st, o.Tick)
		found = lease != ""
		if !found {
			return false
		}
		if st.Cancel != nil && st.Cancel.Lease == lease {
			return false // requested already
		}
		st.Cancel = &history.CancelRequest{Lease: lease, By: o.By, At: time.Now().UTC()}
		return true
	})
	switch {
	case err != nil:
		return Run{}, err
	case len(several) > 1:
		ticks := make([]string, len(several))
		for i, r := range several {
			ticks[i] = r.Tick.UTC().Format(time.RFC3339)
		}
		return Run{}, fmt.Errorf("job %q: %w (%d, ticks %s): say which with a tick", name, ErrSeveralRunning, len(several), strings.Join(ticks, ", "))
	case !found && !o.Tick.IsZero():
		return Run{}, fmt.Errorf("job %q: %w at tick %s", name, ErrNotRunning, o.Tick.UTC().Format(time.RFC3339))
	case !found:
		return Run{}, fmt.Errorf("job %q: %w", name, ErrNotRunning)
	}
	return run, nil
}

// cancelTarget is the run a cancel of tick (zero: the only one) is for and
// its lease id ("" none): the run holding the record, or a parallel run.
// Without a tick and with several runs in progress, it returns them all
// and no lease.
func cancelTarget(st *history.Record, tick time.Time) (Run, string, []Run) {
	var all []Run
	if r, ok := heldRun(st); ok {
		all = append(all, r)
	}
	all = append(all, runningParallel(st)...)
	for _, r := range all {
		if !tick.IsZero() && !r.Tick.Equal(tick) {
			continue
		}
		if tick.IsZero() && len(all) > 1 {
			return Run{}, "", all
		}
		if st.Holder != nil && r.Token == st.Holder.Token {
			return r, st.Holder.Lease, nil
		}
		return r, parallelID(r.Token), nil
	}
	return Run{}, "", nil
}

// heldRun is the running entry of the hold on st, if any.
func heldRun(st *history.Record) (Run, bool) {
	if st.Holder == nil {
		return Run{}, false
	}
	i := slices.IndexFunc(st.Runs, func(r Run) bool {
		return r.Status == StatusRunning && r.Token == st.Holder.Token && r.Owner == st.Holder.Owner
	})
	if i < 0 {
		return Run{}, false
	}
	return st.Runs[i], true
}

// dropStaleCancel drops a cancel request for a hold the record no longer
// has: the run it was for has ended or its hold was taken over.
func dropStaleCancel(st *history.Record) {
	if st.Cancel == nil || st.Holder != nil && st.Holder.Lease == st.Cancel.Lease {
		return
	}
	if token, ok := parallelToken(st.Cancel.Lease); ok {
		for _, r := range runningParallel(st) {
			if r.Token == token {
				return // a parallel run's, still running
			}
		}
	}
	st.Cancel = nil
}

// awaitPoll is how often AwaitRun reads the job's record.
const awaitPoll = 100 * time.Millisecond

// AwaitRun waits until the job's entry run (by ID) is finished and returns
// it as recorded, or ctx's error.
func (h *History) AwaitRun(ctx context.Context, run Run) (Run, error) {
	t := time.NewTicker(awaitPoll)
	defer t.Stop()
	for {
		st, _, err := h.get(ctx, run.Job)
		if err == nil {
			i := slices.IndexFunc(st.Runs, func(r Run) bool { return r.ID == run.ID })
			if i < 0 {
				return Run{}, fmt.Errorf("job %q: run %d is no longer in the history", run.Job, run.ID)
			}
			if r := st.Runs[i]; r.Finished() {
				return r, nil
			}
		}
		select {
		case <-ctx.Done():
			return Run{}, ctx.Err()
		case <-t.C:
		}
	}
}

// Cancel asks the job's running run to stop, wherever it runs (see
// History.Cancel).
func (s *Scheduler) Cancel(ctx context.Context, name string, o CancelOptions) (Run, error) {
	return s.history.Cancel(ctx, name, o)
}

// requestedCancel returns the cancel request the record makes of lease id,
// reading the record (the watch carries only the lease).
func (s *Scheduler) requestedCancel(name, id string) *CancelledError {
	// Not Run's context: a shutdown must not lose who asked.
	ctx, cancel := context.WithTimeout(context.Background(), s.stateTimeout())
	defer cancel()
	st, _, err := s.history.get(ctx, name)
	if err != nil || st.Cancel == nil || st.Cancel.Lease != id {
		return &CancelledError{By: "unknown (the request could not be read)"}
	}
	return &CancelledError{By: st.Cancel.By, Reason: st.Cancel.Reason}
}
