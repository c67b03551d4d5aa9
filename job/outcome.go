package job

import "context"

// Outcome is what a run reports about itself besides its error. The
// scheduler records it in the shared history with the run's status.
type Outcome struct {
	// ExitCode is the exit status of the run's process, or 128+signal when
	// a signal killed it; nil when the run had no process.
	ExitCode *int
	// Output is the tail of the run's combined stdout and stderr.
	Output string
}

type outcomeKey struct{}

// outcomeBox is shared between the scheduler, which reads it after Run
// returned, and the job, which writes it during Run.
type outcomeBox struct{ o Outcome }

// WithOutcome returns a copy of ctx in which SetOutcome stores, and a
// function returning what was stored (the zero Outcome if nothing was).
// The scheduler calls it once per attempt; read the result only after the
// job's Run has returned.
func WithOutcome(ctx context.Context) (context.Context, func() Outcome) {
	b := &outcomeBox{}
	return context.WithValue(ctx, outcomeKey{}, b), func() Outcome { return b.o }
}

// SetOutcome records o for the run ctx belongs to. Without WithOutcome in
// ctx (a job called outside the scheduler) it does nothing. Call it from the
// goroutine running Job.Run, before Run returns.
func SetOutcome(ctx context.Context, o Outcome) {
	if b, ok := ctx.Value(outcomeKey{}).(*outcomeBox); ok {
		b.o = o
	}
}
