package app_test

import (
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/config"
	"github.com/cronlock/cronlock/lock"
	"github.com/cronlock/cronlock/scheduler"
)

// TestConfigBoundsAreTheLibrarys: the configuration refuses, with a line,
// exactly what the scheduler and the lock would refuse without one.
func TestConfigBoundsAreTheLibrarys(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name            string
		config, library int64
	}{
		{"shutdown_grace", int64(config.MaxShutdownGrace), int64(scheduler.MaxShutdownGrace)},
		{"max_concurrent_runs", config.MaxConcurrentRunsLimit, scheduler.MaxConcurrentRunsLimit},
		{"lock.lease", int64(config.MaxLease), int64(lock.MaxLeaseDuration)},
	} {
		if c.config != c.library {
			t.Errorf("%s: config bound %v, library bound %v (%v)", c.name, c.config, c.library, time.Duration(c.library))
		}
	}
}
