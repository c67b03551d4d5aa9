//go:build !linux

package proc

import (
	"context"
	"errors"
)

// errUnsupported is returned by Run where the process-group guarantees cannot
// be given.
var errUnsupported = errors.New("proc: running commands is only supported on Linux")

// Init does nothing outside Linux.
func Init() {}

// Run returns an error outside Linux: the guarantee that a job never outlives
// cronlock relies on Linux-specific behaviour.
func (c Command) Run(ctx context.Context, extraEnv []string) error {
	return errUnsupported
}
