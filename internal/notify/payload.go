package notify

import (
	"time"

	"github.com/cronlock/cronlock/scheduler"
)

// Payload is the JSON object sent to every target: the body of a webhook's
// POST and the standard input of a command. Every key is always present;
// unknown values are null (start, end, exit_code) or empty.
type Payload struct {
	// Event is the event that fired the target: failure, missed, recovered,
	// success, anomaly or suspended.
	Event string `json:"event"`
	Job   string `json:"job"`
	// Tick is the scheduled time of the run (for missed: the first missed
	// tick).
	Tick time.Time `json:"tick"`
	// Manual is true for a run started by a trigger, not by the schedule.
	Manual bool `json:"manual"`
	// Status is the recorded status: succeeded, failed, timeout, lost,
	// missed, abandoned, or anomaly (a note: the job's shared record was
	// repaired; Error says what was found and done).
	Status string `json:"status"`
	// Reason says why ticks were missed (overlap, no_replica, outage,
	// lock_held), or the kind of an anomaly (future_tick, corrupt); "" for
	// other statuses.
	Reason   string     `json:"reason"`
	Attempts int        `json:"attempts"`
	Start    *time.Time `json:"start"`
	End      *time.Time `json:"end"`
	// DurationSeconds is End − Start in seconds, 0 when either is unknown.
	DurationSeconds float64 `json:"duration_seconds"`
	// ExitCode is the exit status of the job's process (128+signal when a
	// signal killed it), or null when unknown.
	ExitCode *int   `json:"exit_code"`
	Error    string `json:"error"`
	// Output is the tail of the job's combined stdout and stderr.
	Output string `json:"output"`
	// Owner is the replica that ran the job and Token its lock's fencing
	// token.
	Owner string `json:"owner"`
	Token uint64 `json:"token"`
	// SuspendedAfter is, for the suspended event, how many failed runs in
	// a row suspended the job (suspend_after_failures); absent otherwise.
	SuspendedAfter int `json:"suspended_after,omitempty"`
}

// NewPayload returns the payload of run for event.
func NewPayload(event string, run scheduler.Run) Payload {
	p := Payload{
		Event:           event,
		Job:             run.Job,
		Tick:            run.Tick,
		Manual:          run.Manual,
		Status:          string(run.Status),
		Attempts:        run.Attempts,
		Start:           timePtr(run.Start),
		End:             timePtr(run.End),
		DurationSeconds: run.Duration().Seconds(),
		Error:           run.Error,
		Owner:           run.Owner,
		Token:           run.Token,
	}
	p.ExitCode, p.Output, p.Reason = run.ExitCode, run.Output, string(run.Reason)
	if event == EventSuspended {
		p.SuspendedAfter = run.SuspendedAfter
	}
	return p
}

// timePtr returns &t, or nil for the zero time (unknown), which encodes as
// null rather than as year 1.
func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
