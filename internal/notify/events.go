package notify

import (
	"github.com/cronlock/cronlock/internal/config"
	"github.com/cronlock/cronlock/scheduler"
)

// Events a target can subscribe to (its on list), the same names as in the
// configuration.
const (
	EventFailure   = config.NotifyFailure
	EventMissed    = config.NotifyMissed
	EventRecovered = config.NotifyRecovered
	EventSuccess   = config.NotifySuccess
	EventAnomaly   = config.NotifyAnomaly
)

// statusInterrupted is the status of a run cut short by its replica stopping
// or its lock lost, with a rerun to come.
const statusInterrupted = scheduler.StatusInterrupted

// Events returns the events that a run recorded with status fires, given
// previous, the status of the job's previous finished run ("" if none), most
// specific first:
//
//   - failed, timeout, lost, abandoned: [failure]
//   - missed: [missed]
//   - anomaly (a note: the job's shared record was repaired): [anomaly]
//   - succeeded: [recovered, success] when previous is a status that is not
//     a success (failed, timeout, lost, abandoned, missed, cancelled,
//     interrupted), else [success]
//   - running, cancelled, interrupted and unknown statuses: none.
//
// Cancelled and interrupted runs fire nothing because they are caused by an
// operator stopping cronlock (shutdown, deploy), not by the job: notifying
// would page someone on every restart. They still count as not successful,
// so the next success is reported as recovered and the all-clear is never
// lost.
func Events(status, previous string) []string {
	switch status {
	case scheduler.StatusFailed, scheduler.StatusTimeout, scheduler.StatusLost, scheduler.StatusAbandoned:
		return []string{EventFailure}
	case scheduler.StatusMissed:
		return []string{EventMissed}
	case scheduler.StatusAnomaly:
		return []string{EventAnomaly}
	case scheduler.StatusSucceeded:
		if notSuccess(previous) {
			return []string{EventRecovered, EventSuccess}
		}
		return []string{EventSuccess}
	}
	return nil
}

// notSuccess reports whether status is a finished run that did not succeed.
func notSuccess(status string) bool {
	switch status {
	case scheduler.StatusFailed, scheduler.StatusTimeout, scheduler.StatusLost, scheduler.StatusAbandoned,
		scheduler.StatusMissed, scheduler.StatusCancelled, statusInterrupted:
		return true
	}
	return false
}
