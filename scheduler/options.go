package scheduler

import (
	"fmt"
	"os"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/lock"
)

// Defaults.
const (
	DefaultAcquireTimeout = 500 * time.Millisecond
	DefaultShutdownGrace  = 30 * time.Second
	DefaultHistorySize    = 20
	DefaultHistoryBucket  = "cronlock_history"
	DefaultReplicaBucket  = "cronlock_replicas"
)

// Options configure a Scheduler. Zero values select the defaults.
type Options struct {
	Logger zerolog.Logger
	// Clock tells the time and runs the timers; default the real clock.
	// Ticks follow the NATS server's clock: the scheduler estimates its
	// offset from this clock (see the package documentation).
	Clock clockwork.Clock
	// LocalClock schedules on Clock as it reads, without estimating the
	// NATS server's offset: for tests that drive a fake clock.
	LocalClock bool
	// AcquireTimeout is how long a replica tries a job's lock at a tick
	// before skipping the tick. Default 500 ms.
	AcquireTimeout time.Duration
	// ShutdownGrace is how long Run waits for running jobs after its
	// context is done, before cancelling them. Default 30 s.
	ShutdownGrace time.Duration
	// ShutdownNow cancels running jobs as soon as Run's context is done,
	// without a grace (ShutdownGrace is then ignored).
	ShutdownNow bool
	// Registerer receives the Prometheus metrics; nil: no metrics.
	Registerer prometheus.Registerer
	// HistorySize is the number of runs kept per job. Default 20.
	HistorySize int
	// HistoryBucket is the KV bucket with the shared per-job state (last
	// claimed tick and history). Default "cronlock_history"; created when
	// missing, with HistoryReplicas replicas.
	HistoryBucket string
	// HistoryReplicas is the replication factor of the history and
	// replicas buckets when New creates them: as the lock bucket's (1, or 3
	// in a 3-node cluster). Default 1.
	HistoryReplicas int
	// ReplicaBucket is the KV bucket where replicas announce themselves
	// (per-key TTLs). Default "cronlock_replicas".
	ReplicaBucket string
	// ReplicaID names this replica in its announcement and in the load
	// spreading; use the lock's owner id. Default lock.DefaultOwnerID().
	ReplicaID string
	// Host, PID and Version describe the replica in its announcement.
	// Defaults: the host name, the process id, "".
	Host    string
	PID     int
	Version string
	// MaxConcurrentRuns bounds the runs of ticks in progress on this
	// replica; at the limit it leaves ticks to other replicas (a tick no
	// replica can take waits for a free run). 0: no limit. Trigger is not
	// counted.
	MaxConcurrentRuns int
	// OnResult, when set, is called once for every result the scheduler
	// records in the shared history, by the replica that recorded it: a
	// finished run, and the missed, skipped and abandoned entries a claim
	// adds. It runs on the scheduler's goroutine: hand slow work off.
	OnResult func(Run)
}

func (o Options) withDefaults() (Options, error) {
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
	for _, d := range []struct {
		name  string
		value *time.Duration
		def   time.Duration
	}{
		{"AcquireTimeout", &o.AcquireTimeout, DefaultAcquireTimeout},
		{"ShutdownGrace", &o.ShutdownGrace, DefaultShutdownGrace},
	} {
		switch {
		case *d.value < 0:
			return o, fmt.Errorf("scheduler: Options.%s %v: must not be negative", d.name, *d.value)
		case *d.value == 0:
			*d.value = d.def
		}
	}
	switch {
	case o.HistorySize < 0:
		return o, fmt.Errorf("scheduler: Options.HistorySize %d: must not be negative", o.HistorySize)
	case o.HistorySize == 0:
		o.HistorySize = DefaultHistorySize
	case o.MaxConcurrentRuns < 0:
		return o, fmt.Errorf("scheduler: Options.MaxConcurrentRuns %d: must not be negative", o.MaxConcurrentRuns)
	}
	if err := o.checkBounds(); err != nil {
		return o, err
	}
	if o.HistoryBucket == "" {
		o.HistoryBucket = DefaultHistoryBucket
	}
	if o.ReplicaBucket == "" {
		o.ReplicaBucket = DefaultReplicaBucket
	}
	if o.ReplicaID == "" {
		o.ReplicaID = lock.DefaultOwnerID()
	}
	if o.Host == "" {
		o.Host, _ = os.Hostname()
	}
	if o.PID == 0 {
		o.PID = os.Getpid()
	}
	return o, nil
}
