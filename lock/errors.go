package lock

import (
	"errors"

	"github.com/nats-io/nats.go/jetstream"
)

var (
	// ErrNotAcquired is returned by Acquire when another owner held the key
	// for the whole acquire timeout. The error's message names that holder.
	// It never wraps a NATS failure: an outage is reported as the NATS error
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

// isConflict reports whether err is a failed compare-and-swap: the key's last
// revision was not the one expected. Replicated (R3) streams report it with
// error code 10164 instead of 10071, and not every nats.go path maps both,
// so match the codes.
func isConflict(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}
