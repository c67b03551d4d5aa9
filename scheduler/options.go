package scheduler

import (
	"fmt"
	"os"
	"reflect"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Defaults.
const (
	DefaultAcquireTimeout = 500 * time.Millisecond
	DefaultShutdownGrace  = 30 * time.Second
	DefaultHistorySize    = 20
	DefaultHistoryBucket  = "cronlock_history"
	DefaultReplicaBucket  = "cronlock_replicas"
)

// Options configure a Scheduler. Zero values select the defaults;
// Validate reports the settings New refuses.
type Options struct {
	// Logger receives the scheduler's events: runs started and finished
	// (info), failed runs, missed ticks, lost leases and NATS trouble (warn,
	// error). The zero value logs warnings and errors to stderr as JSON
	// lines; zerolog.Nop() logs nothing.
	Logger zerolog.Logger
	// Clock is for tests: it tells the time and runs the timers; default
	// the real clock. Ticks follow the NATS server's clock: the scheduler
	// estimates its offset from this clock (see the package documentation).
	Clock clockwork.Clock
	// LocalClock is for tests: it schedules on Clock as it reads, without
	// estimating the NATS server's offset, for tests that drive a fake
	// clock. A deployment must leave it false.
	LocalClock bool
	// AcquireTimeout is how long a replica tries a job's lock at a tick
	// before skipping the tick, counted from when its claim is sent: a
	// tick waiting for a place among the replica's claims in flight (many
	// jobs due at once) has not started it. Default 500 ms.
	AcquireTimeout time.Duration
	// ShutdownGrace is how long Run waits for running jobs after its
	// context is done, before cancelling them. Default 30 s.
	ShutdownGrace time.Duration
	// ShutdownNow cancels running jobs as soon as Run's context is done,
	// without a grace (ShutdownGrace is then ignored): a grace of zero,
	// which the zero value of ShutdownGrace cannot say (it selects the
	// default). cronlock's shutdown_grace: 0s sets it.
	ShutdownNow bool
	// Registerer receives the Prometheus metrics; nil: no metrics.
	Registerer prometheus.Registerer
	// StreamJobMetrics keeps the per-job families that exist for every
	// job (Scheduler.JobMetricFamilies: ~18 series a job) off Registerer:
	// the caller writes them with JobMetricFamily.WriteText after its
	// gathered ones, so that a scrape of 100,000 jobs does not build 1.8
	// million series in memory. Default false: they are registered like
	// the others.
	StreamJobMetrics bool
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
	// spreading. Leave it empty: it is the lock's owner id
	// (lock.Options.OwnerID), which labels the replica's runs; a
	// different value is an error from New, since a run whose owner is
	// not a live replica's id is taken for abandoned.
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
	// ReplicaLabels are this replica's labels (cronlock's replica.labels),
	// announced with it: a job's OnReplicas runs only on the replicas whose
	// labels have all its pairs (job.Matches). Nil: none, which matches only
	// the jobs without OnReplicas. Keys and values satisfy
	// job.ValidateLabel.
	ReplicaLabels map[string]string
	// OnResult, when set, is called once for every result the scheduler
	// records in the shared history, by the replica that recorded it: a
	// finished run, and the missed, skipped and abandoned entries a claim
	// adds. It runs on the scheduler's goroutine: hand slow work off.
	OnResult func(Run)
}

// withDefaults returns o with its defaults filled in, or the error of
// Validate. owner is the lock's owner id: the replica's identity, which
// ReplicaID may only repeat.
func (o Options) withDefaults(owner string) (Options, error) {
	if err := o.Validate(); err != nil {
		return o, err
	}
	switch o.ReplicaID {
	case "", owner:
		o.ReplicaID = owner
	default:
		return o, &OptionError{Field: "ReplicaID", Value: fmt.Sprintf("%q", o.ReplicaID),
			Problem: fmt.Sprintf("must be the lock's owner id %q (lock.Options.OwnerID), which runs and the replica registry both carry; leave it empty to take it", owner)}
	}
	if reflect.ValueOf(o.Logger).IsZero() {
		o.Logger = defaultLogger()
	}
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
	if o.AcquireTimeout == 0 {
		o.AcquireTimeout = DefaultAcquireTimeout
	}
	if o.ShutdownGrace == 0 {
		o.ShutdownGrace = DefaultShutdownGrace
	}
	if o.HistorySize == 0 {
		o.HistorySize = DefaultHistorySize
	}
	if o.HistoryBucket == "" {
		o.HistoryBucket = DefaultHistoryBucket
	}
	if o.ReplicaBucket == "" {
		o.ReplicaBucket = DefaultReplicaBucket
	}
	if o.Host == "" {
		o.Host, _ = os.Hostname()
	}
	if o.PID == 0 {
		o.PID = os.Getpid()
	}
	return o, nil
}

// defaultLogger is the logger of Options without one: warnings and errors
// (failed runs, lost leases, NATS trouble) as JSON lines on stderr, so that
// an embedding program that sets none still sees them.
func defaultLogger() zerolog.Logger {
	return zerolog.New(os.Stderr).Level(zerolog.WarnLevel).With().Timestamp().Str("component", "cronlock").Logger()
}
