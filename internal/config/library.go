package config

import (
	"errors"

	"github.com/cronlock/cronlock/lock"
	"github.com/cronlock/cronlock/scheduler"
)

// validateLibrary checks the settings against the rules of the packages
// that use them, lock.Options.Validate and scheduler.Options.Validate, so
// that a file they would refuse at start is refused here, with its key and
// line. The file's own checks run first and word their errors in the
// file's terms; these add an error only where none of them did (a rule they
// do not repeat, such as lock.renew against the lease's safety margin).
func (d *decoder) validateLibrary(c *Config) {
	d.validateLockLibrary(c.Lock)
	so := scheduler.Options{
		AcquireTimeout: c.Lock.AcquireTimeout.Duration(), ShutdownGrace: c.ShutdownGrace.Duration(),
		HistorySize: c.History.Size, MaxConcurrentRuns: c.MaxConcurrentRuns,
	}
	var oe *scheduler.OptionError
	if err := so.Validate(); errors.As(err, &oe) {
		if path, ok := schedulerKeys[oe.Field]; ok {
			d.check(true, path, nil, "%s, got %v", oe.Problem, oe.Value)
		}
	}
}

// schedulerKeys are the keys of the scheduler.Options fields the file sets.
var schedulerKeys = map[string]string{
	"AcquireTimeout":    "lock.acquire_timeout",
	"ShutdownGrace":     "shutdown_grace",
	"HistorySize":       "history.size",
	"MaxConcurrentRuns": "max_concurrent_runs",
}

// validateLockLibrary runs lock.Options.Validate on the lock settings,
// adding them one key at a time, so that its first error belongs to the key
// just added (the keys before it were valid): the error goes to that key,
// unless the file's checks already found one there or before it.
func (d *decoder) validateLockLibrary(l Lock) {
	steps := []struct {
		path string
		set  func(*lock.Options)
	}{
		{"lock.bucket", func(o *lock.Options) { o.Bucket = l.Bucket }},
		{"lock.lease", func(o *lock.Options) { o.LeaseDuration = l.Lease.Duration() }},
		{"lock.renew", func(o *lock.Options) { o.RenewInterval = l.Renew.Duration() }},
		{"lock.retry_base", func(o *lock.Options) { o.AcquireRetryBaseDelay = l.RetryBase.Duration() }},
		{"lock.retry_max", func(o *lock.Options) { o.AcquireRetryMaxDelay = l.RetryMax.Duration() }},
		{"lock.replicas", func(o *lock.Options) { o.Replicas = l.Replicas }},
	}
	var o lock.Options
	var before []string
	for _, s := range steps {
		s.set(&o)
		if err := o.Validate(); err != nil {
			d.check(true, s.path, before, "%v", err)
			return
		}
		before = append(before, s.path)
	}
}
