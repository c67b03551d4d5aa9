package scheduler

import (
	"context"
	"time"

	"github.com/cronlock/cronlock/lock"
)

// Lease is what the scheduler needs of a held lock. *lock.Lease
// satisfies it.
type Lease interface {
	// Owner and Token label the run: who holds the lock, and its fencing
	// token.
	Owner() string
	Token() uint64
	// Context is cancelled when the lease is lost or released; its cause
	// is lock.ErrLeaseLost after a loss. A run's context derives from it.
	Context() context.Context
	// Deadline is the lease's local safe deadline and a channel closed when
	// it changes (job.DeadlineFunc), for supervisors of child processes.
	Deadline() (time.Time, <-chan struct{})
	// Release frees the lock.
	Release(ctx context.Context) error
}

// acquireFunc takes a job's lock, waiting up to timeout, failing with an
// error matching lock.ErrNotAcquired when another owner kept it.
type acquireFunc func(ctx context.Context, key string, timeout time.Duration) (Lease, error)

func acquireWith(l *lock.Locker) acquireFunc {
	return func(ctx context.Context, key string, timeout time.Duration) (Lease, error) {
		lease, err := l.Acquire(ctx, key, lock.WithTimeout(timeout))
		if err != nil {
			return nil, err // not lease: a nil *lock.Lease is a non-nil Lease
		}
		return lease, nil
	}
}
