package scheduler

import "github.com/cronlock/cronlock/internal/history"

// The entries of the shared history, as the scheduler records them and
// History returns them. They are defined with the stored format in the
// history package; these names are their public ones.
type (
	// Run is one entry of a job's shared history.
	Run = history.Run
	// RunStatus is the status of a history entry (Run.Status), stored and
	// shown as its string.
	RunStatus = history.RunStatus
	// Reason says why ticks were missed or skipped, or what an anomaly
	// note found (Run.Reason), stored and shown as its string.
	Reason = history.Reason
	// Suspension records a suspend: an operator's, or one
	// job.Job.SuspendAfterFailures made.
	Suspension = history.Suspension
	// CorruptError is a job's record in the history bucket that is not a
	// job state: not JSON, or JSON of another shape. History.State returns
	// it (wrapped), so that a view can mark that one job corrupt and show
	// the others; the scheduler repairs the record (see anomaly.go).
	CorruptError = history.CorruptError
)

// Status of a run, as recorded in the shared history.
const (
	StatusRunning   = history.StatusRunning
	StatusSucceeded = history.StatusSucceeded
	StatusFailed    = history.StatusFailed
	StatusTimeout   = history.StatusTimeout
	StatusLost      = history.StatusLost      // the lease was lost during the run
	StatusCancelled = history.StatusCancelled // shutdown cancelled the run after ShutdownGrace
	StatusMissed    = history.StatusMissed    // ticks no replica ran; see Run.Reason and Run.Error
	StatusAbandoned = history.StatusAbandoned // the replica running it stopped without recording a result
	// StatusInterrupted: a shutdown or a lost lease ended the run of a job
	// with OnInterrupt rerun; the tick is run again (see job.InterruptRerun).
	StatusInterrupted = history.StatusInterrupted
	// StatusSkipped: ticks deliberately not run (Reason "suspended").
	StatusSkipped = history.StatusSkipped
	// StatusAnomaly: a note, not a run: the job's shared record was found
	// untrustworthy and repaired (Reason AnomalyFutureTick or
	// AnomalyCorrupt; Error says what was found and done). See anomaly.go.
	StatusAnomaly = history.StatusAnomaly
)

// Reasons of missed and skipped entries (Run.Reason).
const (
	// ReasonOverlap: the ticks came while a run of the job held its lock
	// (the job slower than its schedule, not an outage: no "missed"
	// notification).
	ReasonOverlap = history.ReasonOverlap
	// ReasonNoReplica: no replica was there to run the ticks.
	ReasonNoReplica = history.ReasonNoReplica
	// ReasonOutage: replicas were up but could not coordinate through NATS.
	ReasonOutage = history.ReasonOutage
	// ReasonLockHeld: the job's lock was held by a holder that did not run
	// the ticks (typically a replica that died while running it).
	ReasonLockHeld = history.ReasonLockHeld
	// ReasonSuspended: the job was suspended (a skipped entry).
	ReasonSuspended = history.ReasonSuspended
)

// MissedReasons are the reasons of missed entries: the values of the reason
// label of cronlock_ticks_missed_total, each of which exists (at 0) for
// every job from its start.
var MissedReasons = []Reason{ReasonOverlap, ReasonNoReplica, ReasonOutage, ReasonLockHeld, ReasonGroupFull}
