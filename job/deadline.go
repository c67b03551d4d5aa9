package job

import (
	"context"
	"time"
)

// DeadlineFunc reports a run's lease's current local safe deadline (the
// moment its holder must stop unless a renewal is confirmed first) and a
// channel closed when that deadline changes: a renewal moved it, or the
// lease ended.
type DeadlineFunc func() (deadline time.Time, changed <-chan struct{})

type deadlineKey struct{}

// WithLeaseDeadline returns a copy of ctx carrying f. The scheduler attaches
// it to the context of every run it makes under a lease.
func WithLeaseDeadline(ctx context.Context, f DeadlineFunc) context.Context {
	return context.WithValue(ctx, deadlineKey{}, f)
}

// LeaseDeadline returns the DeadlineFunc of the run ctx belongs to, or nil.
// A supervisor of an external process uses it to stop the process on its
// own at the deadline, even while the scheduler itself is frozen; an
// in-process job needs nothing more than its context, which is cancelled at
// that deadline.
func LeaseDeadline(ctx context.Context) DeadlineFunc {
	f, _ := ctx.Value(deadlineKey{}).(DeadlineFunc)
	return f
}
