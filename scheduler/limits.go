package scheduler

import (
	"fmt"
	"time"
)

// Upper bounds on Options, checked by New: far above what a deployment
// needs, low enough that an absurd value is an error rather than a
// replica that never finishes shutting down.
const (
	// MaxShutdownGrace: a day of waiting for running jobs at shutdown.
	MaxShutdownGrace = 24 * time.Hour
	// MaxHistorySize: NATS KV keeps at most 64 revisions of a key.
	MaxHistorySize = 64
	// MaxConcurrentRunsLimit bounds Options.MaxConcurrentRuns (0 is no
	// limit): ten times the largest configuration known (100,000 jobs).
	MaxConcurrentRunsLimit = 1_000_000
)

// checkBounds reports the first setting of o above its bound.
func (o Options) checkBounds() error {
	switch {
	case o.ShutdownGrace > MaxShutdownGrace:
		return &OptionError{Field: "ShutdownGrace", Value: o.ShutdownGrace, Problem: fmt.Sprintf("must be at most %v", MaxShutdownGrace)}
	case o.HistorySize > MaxHistorySize:
		return &OptionError{Field: "HistorySize", Value: o.HistorySize,
			Problem: fmt.Sprintf("must be at most %d (NATS KV keeps at most %d revisions per key)", MaxHistorySize, MaxHistorySize)}
	case o.MaxConcurrentRuns > MaxConcurrentRunsLimit:
		return &OptionError{Field: "MaxConcurrentRuns", Value: o.MaxConcurrentRuns,
			Problem: fmt.Sprintf("must be at most %d (0: no limit)", MaxConcurrentRunsLimit)}
	}
	return nil
}
