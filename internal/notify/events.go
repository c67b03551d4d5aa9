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
	EventSuspended = config.NotifySuspended
)

// Events returns the events that a run recorded with status fires, given
// previous, the status of the job's previous finished run ("" if none), most
// specific first:
//
//   - failed, timeout, lost, abandoned (RunStatus.Failed): [failure]
//   - missed: [missed]
//   - anomaly (a note: the job's shared record was repaired): [anomaly]
//   - succeeded: [recovered, success] when previous is a status that is not
//     a success (RunStatus.NotSucceeded: failed, timeout, lost,
//     abandoned, missed, cancelled, interrupted), else [success]
//   - running, cancelled, interrupted and unknown statuses: none.
//
// Cancelled and interrupted runs fire nothing because they are caused by an
// operator stopping cronlock (shutdown, deploy), not by the job: notifying
// would page someone on every restart. They still count as not successful,
// so the next success is reported as recovered and the all-clear is never
// lost.
func Events(status, previous scheduler.RunStatus) []string {
	return statusEvents(status, previous)
}

// RunEvents is Events of run's status, with the suspended event first
// for the failure after which suspend_after_failures suspended the job
// (Run.SuspendedAfter).
func RunEvents(run scheduler.Run, previous scheduler.RunStatus) []string {
	events := statusEvents(run.Status, previous)
	if run.SuspendedAfter > 0 {
		events = append([]string{EventSuspended}, events...)
	}
	return events
}

func statusEvents(status, previous scheduler.RunStatus) []string {
	switch {
	case status.Failed():
		return []string{EventFailure}
	case status == scheduler.StatusMissed:
		return []string{EventMissed}
	case status == scheduler.StatusAnomaly:
		return []string{EventAnomaly}
	case status == scheduler.StatusSucceeded:
		if previous.NotSucceeded() {
			return []string{EventRecovered, EventSuccess}
		}
		return []string{EventSuccess}
	}
	return nil
}
