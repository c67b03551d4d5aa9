package scheduler

import "errors"

// Errors of the Scheduler's methods, for errors.Is. The errors returned
// wrap them with the method and the job's name.
var (
	// ErrUnknownJob: Trigger, TriggerRun or Remove of a name that is not
	// registered (never added, or removed).
	ErrUnknownJob = errors.New("no job")
	// ErrJobExists: Add of a name that is registered already.
	ErrJobExists = errors.New("already registered")
	// ErrStopped: Add, Trigger or TriggerRun once the scheduler shuts down
	// (Run's context is done) or has shut down.
	ErrStopped = errors.New("scheduler shut down")
)

// ErrShutdown is ErrStopped, under the name it had before ErrStopped:
// kept for compatibility.
var ErrShutdown = ErrStopped
