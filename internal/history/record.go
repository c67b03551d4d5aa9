package history

import (
	"time"
)

// Record is the shared, durable state of one job: the last tick claimed by
// any replica, its recent runs (oldest first), a pending rerun and whether
// an operator suspended it. It is one key of the history bucket, updated
// only with compare-and-swap.
type Record struct {
	LastTick time.Time `json:"last_tick,omitzero"`
	Runs     []Run     `json:"runs"`
	// Seq is the ID of the last entry added to Runs.
	Seq uint64 `json:"seq,omitempty"`
	// LastSuccess and LastFailure outlive the runs they came from.
	LastSuccess time.Time `json:"last_success,omitzero"`
	LastFailure time.Time `json:"last_failure,omitzero"`
	// Suspended is set by Suspend and cleared by Resume.
	Suspended *Suspension `json:"suspended,omitempty"`
	// Rerun is an interrupted tick waiting to be run again.
	Rerun *Rerun `json:"rerun,omitempty"`
	// Definition is the job.Job.Definition of the last run added that had
	// one (a claim, a manual run): see the scheduler's definition.go. Older releases
	// ignore it.
	Definition string `json:"definition,omitempty"`
	// Holder is the run that holds the job's lock (the scheduler's hold.go); nil while
	// the lock is free.
	Holder *Hold `json:"holder,omitempty"`
	// LastToken is the fencing token of the last hold taken: the next is
	// one more.
	LastToken uint64 `json:"last_token,omitempty"`
	// Cancel asks the run holding the lock to stop (the scheduler's cancel.go).
	Cancel *CancelRequest `json:"cancel,omitempty"`
	// Failures counts the job's failed runs since its last success (or
	// resume), for job.Job.SuspendAfterFailures.
	Failures int `json:"failures,omitempty"`
	// Queued is a tick that came while the job ran, waiting for the run
	// to end (job.OverlapQueue, OverlapReplace; the scheduler's overlap.go).
	Queued time.Time `json:"queued,omitzero"`
	// Backfill is a backfill in progress (the scheduler's backfill.go).
	Backfill *Backfill `json:"backfill,omitempty"`
}

// Suspension records an operator's suspend.
type Suspension struct {
	At time.Time `json:"at"`
	By string    `json:"by,omitempty"`
	// Note says why, for a suspension cronlock made itself ("suspended
	// after 3 consecutive failures"); empty for an operator's.
	Note string `json:"note,omitempty"`
}

// Rerun is an interrupted tick of an InterruptRerun job, to be run again
// before Until (the job's next tick).
type Rerun struct {
	Tick          time.Time `json:"tick"`
	Until         time.Time `json:"until"`
	Attempts      int       `json:"attempts"`      // attempts made so far
	Interruptions int       `json:"interruptions"` // interruptions so far
}

// Add appends an entry, numbering it.
func (st *Record) Add(r Run) Run {
	st.Seq++
	r.ID = st.Seq
	r.Previous = st.Previous(len(st.Runs))
	st.Runs = append(st.Runs, r)
	st.NoteResult(r)
	return r
}

// NoteResult keeps the times of the last success and failure.
func (st *Record) NoteResult(r Run) {
	switch {
	case r.Succeeded():
		st.LastSuccess = r.End
		st.Failures = 0
	case r.Failed():
		st.Failures++
		at := r.End
		if at.IsZero() {
			at = r.Tick
		}
		st.LastFailure = at
	}
}

// Previous is the status of the entry before index i, passing over
// ticks missed for overlap (see Run.Previous) and anomaly notes (a repair
// of the record says nothing of how the job ran).
func (st *Record) Previous(i int) RunStatus {
	for j := i - 1; j >= 0; j-- {
		if r := st.Runs[j]; (r.Status != StatusMissed || r.Reason != ReasonOverlap) && r.Status != StatusAnomaly && !r.CancelledOnRequest() {
			return r.Status
		}
	}
	return ""
}

// Hold is the run holding a job's lock, as its state record stores it.
type Hold struct {
	Owner string `json:"owner"`
	// Lease identifies the hold: one per take, kept across the take's
	// retries, so a write whose reply was lost is known as ours.
	Lease string `json:"lease"`
	Token uint64 `json:"token"`
	// Since is when the hold was taken, and At when it was taken or last
	// renewed, on the holder's clock (for people: replicas measure expiry
	// on their own clocks).
	Since time.Time `json:"since"`
	// At is when the hold was taken or last renewed, on the holder's clock
	// (for people: replicas measure expiry on their own clocks).
	At time.Time `json:"at"`
}

// CancelRequest asks the run holding the job's lock under Lease to stop.
type CancelRequest struct {
	Lease string    `json:"lease"`
	By    string    `json:"by,omitempty"`
	At    time.Time `json:"at"`
	// Reason is ReasonReplaced when a tick of an overlap: replace job
	// stops the run; empty for an operator's cancel.
	Reason Reason `json:"reason,omitempty"`
}

// Backfill is a backfill in progress, in the job's record.
type Backfill struct {
	From  time.Time `json:"from"`
	To    time.Time `json:"to"`
	Next  time.Time `json:"next"`  // the first tick not yet considered
	Total int       `json:"total"` // ticks to run when it was asked
	Done  int       `json:"done"`  // ticks started so far
	By    string    `json:"by,omitempty"`
	At    time.Time `json:"at"`
}
