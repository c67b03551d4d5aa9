package scheduler

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the scheduler's Prometheus collectors. They always exist, so
// the code records unconditionally; they are registered only when
// Options.Registerer is set.
type metrics struct {
	runs        *prometheus.CounterVec   // job, status
	duration    *prometheus.HistogramVec // job
	skipped     *prometheus.CounterVec   // job, reason
	missed      *prometheus.CounterVec   // job
	acquire     *prometheus.HistogramVec // result
	lost        *prometheus.CounterVec   // job
	running     *prometheus.GaugeVec     // job
	lastSuccess *prometheus.GaugeVec     // job
	lastFailure *prometheus.GaugeVec     // job
	clockOffset prometheus.Gauge
}

// Reasons a replica skips a tick.
const (
	skipLocked     = "locked"      // another replica holds the job's lock
	skipAlreadyRun = "already_run" // the tick (or a later one) was claimed already
	skipError      = "error"       // NATS failed while acquiring or claiming
	skipShutdown   = "shutdown"    // the scheduler is stopping
	// ReasonSuspended ("suspended"): the job is suspended; counted by the
	// replica that recorded the skipped tick.
)

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cronlock_runs_total", Help: "Runs finished on this replica, by job and status.",
		}, []string{"job", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "cronlock_run_duration_seconds", Help: "Duration of runs on this replica (all attempts).",
			Buckets: prometheus.ExponentialBuckets(0.005, 4, 12), // 5 ms … 6 h
		}, []string{"job"}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cronlock_ticks_skipped_total", Help: "Ticks this replica did not run, by job and reason (locked, already_run, error, shutdown, suspended).",
		}, []string{"job", "reason"}),
		missed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cronlock_ticks_missed_total", Help: "Ticks that no replica ran, by job and reason (overlap: the job's previous run still ran; no_replica; outage), counted by the replica that recorded them.",
		}, []string{"job", "reason"}),
		acquire: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "cronlock_lock_acquire_seconds", Help: "Time to acquire a job's lock, by result (acquired, not_acquired, error).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10), // 100 µs … 26 s
		}, []string{"result"}),
		lost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cronlock_leases_lost_total", Help: "Runs whose lock lease was lost while running.",
		}, []string{"job"}),
		running: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "cronlock_running_jobs", Help: "Runs in progress on this replica, by job.",
		}, []string{"job"}),
		lastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "cronlock_last_success_timestamp_seconds", Help: "Unix time of the job's last successful run on any replica (shared history).",
		}, []string{"job"}),
		lastFailure: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "cronlock_last_failure_timestamp_seconds", Help: "Unix time of the job's last failed run (failed, timeout, lost, abandoned) on any replica (shared history).",
		}, []string{"job"}),
		clockOffset: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "cronlock_clock_offset_seconds", Help: "Estimated NATS server clock minus this host's clock; ticks follow the server's clock.",
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.runs, m.duration, m.skipped, m.missed, m.acquire, m.lost, m.running, m.lastSuccess, m.lastFailure, m.clockOffset} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
