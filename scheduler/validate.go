package scheduler

import (
	"fmt"
	"time"

	"github.com/cronlock/cronlock/job"
)

// OptionError is the error of Options.Validate and New for a bad setting:
// the Options field, its value and what is wrong with it.
type OptionError struct {
	Field   string // e.g. "MaxConcurrentRuns"
	Value   any
	Problem string // e.g. "must not be negative"
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("scheduler: Options.%s %v: %s", e.Field, e.Value, e.Problem)
}

// Validate reports the first setting of o that New refuses, as an
// *OptionError; nil when New would accept o. Zero values are valid: they
// select the defaults. It checks what o says alone: New also checks
// ReplicaID against the lock's owner id.
func (o Options) Validate() error {
	for _, d := range []struct {
		field string
		value time.Duration
	}{
		{"AcquireTimeout", o.AcquireTimeout},
		{"ShutdownGrace", o.ShutdownGrace},
	} {
		if d.value < 0 {
			return &OptionError{Field: d.field, Value: d.value, Problem: "must not be negative"}
		}
	}
	for _, n := range []struct {
		field string
		value int
	}{
		{"HistorySize", o.HistorySize},
		{"MaxConcurrentRuns", o.MaxConcurrentRuns},
	} {
		if n.value < 0 {
			return &OptionError{Field: n.field, Value: n.value, Problem: "must not be negative"}
		}
	}
	if err := job.ValidateLabels(o.ReplicaLabels); err != nil {
		return &OptionError{Field: "ReplicaLabels", Value: o.ReplicaLabels, Problem: err.Error()}
	}
	return o.checkBounds()
}
