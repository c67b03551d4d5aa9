package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/cronlock/cronlock/internal/config"
	"github.com/cronlock/cronlock/lock"
	"github.com/cronlock/cronlock/scheduler"
)

// A job's lock is held in its state record in the history bucket (see
// scheduler/hold.go), not in the lock bucket: the operator commands, the
// page and the trigger server read and free it there. The lock bucket is
// still read for the locks that the lock package's users take there, and
// that replicas of a release before the state record became the lock
// take during a rolling update.

// HistoryOptions are the scheduler.HistoryOptions that cfg describes: the
// lease makes a held job's reported ExpiresAt (its last renewal plus the
// lease, on the holder's clock).
func HistoryOptions(cfg *config.Config) scheduler.HistoryOptions {
	return scheduler.HistoryOptions{
		Bucket: cfg.History.Bucket, Replicas: cfg.Lock.Replicas, Size: cfg.History.Size,
		LeaseDuration: cfg.Lock.Lease.Duration(),
	}
}

// Locks returns the holder of every held lock, sorted by key: the jobs'
// locks from the history bucket, then, for each key, any lock of the lock
// bucket (whose keys need not be jobs of the configuration).
func (c *Client) Locks(ctx context.Context) ([]lock.Holder, error) {
	h, err := c.history(ctx)
	if err != nil {
		return nil, err
	}
	jobs, err := h.Locks(ctx)
	if err != nil {
		return nil, err
	}
	others, err := c.locker.List(ctx)
	if err != nil {
		return nil, err
	}
	out := append(jobs, others...)
	slices.SortStableFunc(out, func(a, b lock.Holder) int { return cmp.Compare(a.Key, b.Key) })
	return out, nil
}

// Unlock force-releases the lock called key, whoever holds it, and returns
// the holder it removed: the job's lock in its state record when it is
// held there, else the lock bucket's key. The holder's run is cancelled
// (within a watch delivery on a replica that follows the history, at its
// next renewal at the latest). Errors match lock.ErrNotHeld when the key is
// free in both.
func (c *Client) Unlock(ctx context.Context, key string) (lock.Holder, error) {
	if scheduler.ValidateRecord(key) == nil { // a job's, or an every_replica record's
		h, err := c.history(ctx)
		if err != nil {
			return lock.Holder{}, err
		}
		if hd, err := h.ForceRelease(ctx, key); !errors.Is(err, lock.ErrNotHeld) {
			return hd, err
		}
	}
	hd, err := c.locker.Holder(ctx, key)
	if err != nil {
		return lock.Holder{}, err
	}
	if err := c.locker.ForceRelease(ctx, key); err != nil {
		return lock.Holder{}, err
	}
	return hd, nil
}

// holder returns who holds the job's lock, from its state record, or an
// error matching lock.ErrNotHeld when it is free. A corrupt record holds
// no lock anyone can read: it counts as free, so that the page shows the
// job's row and detail as corrupt (and a trigger goes to the scheduler,
// which repairs it) instead of failing.
func (st webState) holder(ctx context.Context, name string) (lock.Holder, error) {
	h, err := st.hist.Holder(ctx, name)
	if bad := (*scheduler.CorruptError)(nil); errors.As(err, &bad) {
		return lock.Holder{}, fmt.Errorf("%w: %q: %w", lock.ErrNotHeld, name, bad)
	}
	return h, err
}
