package lock

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrNotAcquired is matched (errors.Is) by the *NotAcquiredError that
	// Acquire returns when another owner held the key for the whole acquire
	// timeout. It never wraps a NATS failure: an outage is reported as the NATS error
	// itself, so callers can tell contention from unavailability.
	ErrNotAcquired = errors.New("lock not acquired")

	// ErrLeaseLost is what Lease.Err returns once the lease was lost: a
	// renewal found another revision on the key, or the local safe deadline
	// passed without a confirmed renewal.
	ErrLeaseLost = errors.New("lock lease lost")

	// ErrNotHeld is returned by Holder and ForceRelease for a key that no one
	// holds.
	ErrNotHeld = errors.New("lock not held")

	// ErrServerTooOld is returned by New when the NATS server cannot expire
	// individual keys (per-message TTLs need nats-server 2.11 or newer).
	ErrServerTooOld = errors.New("nats-server 2.11 or newer is required (per-message TTL, LimitMarkerTTL)")
)

// NotAcquiredError is Acquire's error when another owner held the key for
// the whole acquire timeout. errors.Is(err, ErrNotAcquired) holds for it;
// errors.As gives the holder, to log as a field.
type NotAcquiredError struct {
	Key     string
	Timeout time.Duration
	// Holder is the last holder seen; its Owner is empty when it could not
	// be read.
	Holder Holder
}

func (e *NotAcquiredError) Error() string {
	who := "another owner"
	if e.Holder.Owner != "" {
		who = e.Holder.String()
	}
	return fmt.Sprintf("lock: %q not acquired within %v: held by %s", e.Key, e.Timeout, who)
}

// Unwrap makes errors.Is(err, ErrNotAcquired) hold.
func (e *NotAcquiredError) Unwrap() error { return ErrNotAcquired }
