package app

import "time"

// Timings of the daemon's start and stop that are not settings.
const (
	// openRetryFirst and openRetryMax bound the backoff between attempts
	// to open the buckets while NATS does not answer (openBuckets): the
	// first retry comes soon, for a server that is just starting; later
	// ones at most every 10 s, so that a long outage costs little and the
	// daemon is ready within 10 s of NATS answering.
	openRetryFirst = 500 * time.Millisecond
	openRetryMax   = 10 * time.Second
	// notifyDrain bounds delivering the notifications queued when the
	// scheduler has stopped: a shutdown (a deploy) should not wait long
	// for a slow webhook; the deliveries still going then are aborted.
	notifyDrain = 5 * time.Second
	// embeddedReadyPoll is how long each check of the embedded server's
	// readiness waits for it, within embeddedReady.
	embeddedReadyPoll = 50 * time.Millisecond
)
