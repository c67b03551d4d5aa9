package history

import (
	"time"
)

// RunStatus is the status of a history entry (Run.Status), stored and
// shown as its string.
type RunStatus string

// Status of a run, as recorded in the shared history.
const (
	StatusRunning   RunStatus = "running"
	StatusSucceeded RunStatus = "succeeded"
	StatusFailed    RunStatus = "failed"
	StatusTimeout   RunStatus = "timeout"
	StatusLost      RunStatus = "lost"      // the lease was lost during the run
	StatusCancelled RunStatus = "cancelled" // shutdown cancelled the run after ShutdownGrace
	StatusMissed    RunStatus = "missed"    // ticks no replica ran; see Run.Reason and Run.Error
	StatusAbandoned RunStatus = "abandoned" // the replica running it stopped without recording a result
	// StatusInterrupted: a shutdown or a lost lease ended the run of a job
	// with OnInterrupt rerun; the tick is run again (see job.InterruptRerun).
	StatusInterrupted RunStatus = "interrupted"
	// StatusSkipped: ticks deliberately not run (Reason "suspended").
	StatusSkipped RunStatus = "skipped"
	// StatusAnomaly: a note, not a run: the job's shared record was found
	// untrustworthy and repaired (Reason AnomalyFutureTick or
	// AnomalyCorrupt; Error says what was found and done). See anomaly.go.
	StatusAnomaly RunStatus = "anomaly"
)

// Reason says why ticks were missed or skipped, or what an anomaly note
// found (Run.Reason), stored and shown as its string.
type Reason string

// Reasons of missed and skipped entries (Run.Reason).
const (
	// ReasonOverlap: the ticks came while a run of the job (scheduled,
	// rerun or manual) held its lock. Like Kubernetes' concurrencyPolicy Forbid, this is the
	// job being slower than its schedule, not an outage: it fires no
	// "missed" notification.
	ReasonOverlap Reason = "overlap"
	// ReasonNoReplica: no replica was there to run the ticks.
	ReasonNoReplica Reason = "no_replica"
	// ReasonOutage: replicas were up but could not coordinate through NATS
	// (disconnected, no stream leader, no quorum).
	ReasonOutage Reason = "outage"
	// ReasonLockHeld: the job's lock was held by a holder that did not
	// run the ticks and ran no live run of the job: typically a replica
	// that died while running it, whose lock frees when its lease ends.
	ReasonLockHeld Reason = "lock_held"
	// ReasonSuspended: the job was suspended (a skipped entry).
	ReasonSuspended Reason = "suspended"
)

// Run is one entry of a job's shared history.
type Run struct {
	Job string `json:"job"`
	// ID numbers the job's entries: it grows by one with each entry.
	ID     uint64    `json:"id,omitempty"`
	Tick   time.Time `json:"tick"`
	Manual bool      `json:"manual,omitempty"` // started by Trigger, not by the schedule
	// Backfill: a run of a past tick that a backfill ran (scheduler.History.Backfill).
	Backfill bool `json:"backfill,omitempty"`
	// Parallel: a run under overlap allow, which holds one of the job's
	// parallel slots instead of its record (parallel.go).
	Parallel bool      `json:"parallel,omitempty"`
	Owner    string    `json:"owner,omitempty"`
	Token    uint64    `json:"token,omitempty"`
	Attempts int       `json:"attempts,omitempty"`
	Start    time.Time `json:"start,omitzero"`
	End      time.Time `json:"end,omitzero"`
	Status   RunStatus `json:"status"`
	// Reason says why ticks were missed or skipped (ReasonX).
	Reason Reason `json:"reason,omitempty"`
	// Ticks counts the ticks a missed or skipped entry stands for; Tick is
	// the first of them.
	Ticks int    `json:"ticks,omitempty"`
	Error string `json:"error,omitempty"`
	// By names who cancelled a cancelled run (scheduler.History.Cancel), or the
	// replica whose newer tick replaced it (Reason ReasonReplaced); empty
	// for a run a shutdown cancelled.
	By string `json:"by,omitempty"`
	// ExitCode is the exit status of the run's process (128+signal when a
	// signal killed it); nil when the run had no process or has not ended.
	ExitCode *int `json:"exit_code,omitempty"`
	// Output is the tail of the run's output. It is kept under a key of
	// its own, not in the job's state that every tick rewrites: scheduler.History.Runs
	// leaves it empty, History.Output reads it.
	Output string `json:"output,omitempty"`
	// Previous is the status of the job's entry before this one ("" for
	// the first), for notifications ("recovered"), passing over entries of
	// ticks missed for overlap: they mean the job was slower than its
	// schedule, which no notification reports, so none may report its end
	// as a recovery; and over runs cancelled on request, for the same
	// reason. Not stored.
	Previous RunStatus `json:"-"`

	// SuspendedAfter is set on the entry whose result suspended the job
	// (job.Job.SuspendAfterFailures): the count of failures in a row. Not
	// stored; the "suspended" notification reads it.
	SuspendedAfter int `json:"-"`
}

// CancelledOnRequest reports whether the entry is a run stopped by a
// cancel request (an operator's, or a newer tick replacing it): a choice,
// not how the job ran, so no notification reads it as the job's previous
// status.
func (r Run) CancelledOnRequest() bool { return r.Status == StatusCancelled && r.By != "" }

// Duration is End − Start, or 0 for a run that has not ended.
func (r Run) Duration() time.Duration {
	if r.End.IsZero() || r.Start.IsZero() {
		return 0
	}
	return r.End.Sub(r.Start)
}

// Finished reports whether the entry is final: not running.
func (r Run) Finished() bool { return r.Status != StatusRunning }

// Succeeded reports whether the entry is a success.
func (r Run) Succeeded() bool { return r.Status == StatusSucceeded }

// Failed reports whether the entry is a failure of the job (see
// RunStatus.Failed).
func (r Run) Failed() bool { return r.Status.Failed() }

// Failed reports whether s is a failure of the job: failed, timeout, lost
// or abandoned. These, and only these, count as failures everywhere: the
// history's last failure, the "failure" notification. Missed, cancelled
// and interrupted are not failures of the job (an outage, an operator's
// shutdown), though not successes either (see NotSucceeded).
func (s RunStatus) Failed() bool {
	switch s {
	case StatusFailed, StatusTimeout, StatusLost, StatusAbandoned:
		return true
	}
	return false
}

// NotSucceeded reports whether s is a finished run that did not succeed: a
// failure, missed ticks, or a run cancelled or interrupted by a shutdown. A
// success after one is a recovery. Running, skipped, anomaly notes and
// unknown statuses are neither.
func (s RunStatus) NotSucceeded() bool {
	switch s {
	case StatusMissed, StatusCancelled, StatusInterrupted:
		return true
	}
	return s.Failed()
}
