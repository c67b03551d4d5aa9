package job

import (
	"context"
	"encoding/json"
	"time"
)

// RunInfo describes the run a Job.Run call belongs to. The scheduler attaches
// it to the context it passes to Run; read it with FromContext.
type RunInfo struct {
	// Job is the job's name.
	Job string
	// Tick is the scheduled instant this run is for (not the moment it
	// started, which may be later after a catch-up or a retry).
	Tick time.Time
	// Attempt counts the tries within this tick: 1 for the first, 2 for the
	// first retry, and so on.
	Attempt int
	// Owner identifies the replica holding the lock for this tick.
	Owner string
	// Token is the fencing token of that lock: it increases with every
	// acquisition, so a downstream system can reject writes that carry an
	// older token than one it has already seen.
	Token uint64
}

// contextKey is unexported so that only this package can set or read the
// RunInfo value; a struct type makes the key allocation-free.
type contextKey struct{}

// NewContext returns a copy of ctx carrying info. The scheduler uses it to
// attach RunInfo to the context it passes to Job.Run. A nil ctx is treated as
// context.Background() rather than panicking.
func NewContext(ctx context.Context, info RunInfo) context.Context {
	if ctx == nil {
		ctx = context.Background()
	}
	return context.WithValue(ctx, contextKey{}, info)
}

// FromContext returns the RunInfo attached to ctx by NewContext, and whether
// there was one. A nil ctx has none.
func FromContext(ctx context.Context) (RunInfo, bool) {
	if ctx == nil {
		return RunInfo{}, false
	}
	info, ok := ctx.Value(contextKey{}).(RunInfo)
	return info, ok
}

// payloadKey is the context key of a runtime job's payload.
type payloadKey struct{}

// WithPayload returns a copy of ctx carrying a runtime job's payload (a
// JSON object). The scheduler attaches it to the context of the runs of
// the runtime jobs it follows (scheduler.Kinds).
func WithPayload(ctx context.Context, payload json.RawMessage) context.Context {
	if ctx == nil {
		ctx = context.Background()
	}
	return context.WithValue(ctx, payloadKey{}, payload)
}

// Payload returns the payload attached to ctx by WithPayload, or nil.
func Payload(ctx context.Context) json.RawMessage {
	if ctx == nil {
		return nil
	}
	p, _ := ctx.Value(payloadKey{}).(json.RawMessage)
	return p
}
