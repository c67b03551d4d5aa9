package app

import (
	"runtime"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// reloadMetrics record the outcome of configuration reloads (SIGHUP or a
// change of the watched file). The gauges follow Prometheus' own
// prometheus_config_last_reload_successful and
// prometheus_config_last_reload_success_timestamp_seconds, so that the same
// alert ("the last reload failed") fits both.
type reloadMetrics struct {
	total       *prometheus.CounterVec
	lastOK      prometheus.Gauge
	lastSuccess prometheus.Gauge
}

func newReloadMetrics() *reloadMetrics {
	return &reloadMetrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cronlock_config_reloads_total",
			Help: "Configuration reloads (SIGHUP or a change of the watched file), by result (success, failure).",
		}, []string{"result"}),
		lastOK: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "cronlock_config_last_reload_successful",
			Help: "1 if the last configuration reload succeeded (or none has been tried since start), 0 if it failed.",
		}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "cronlock_config_last_reload_success_timestamp_seconds",
			Help: "Unix time of the last successful configuration load, the one at start included.",
		}),
	}
}

// loaded records the configuration read at start: a successful load.
func (m *reloadMetrics) loaded() {
	m.lastOK.Set(1)
	m.lastSuccess.SetToCurrentTime()
	// Both results show up as 0 before the first reload.
	m.total.WithLabelValues("success")
	m.total.WithLabelValues("failure")
}

// record counts one reload and sets the gauges. A reload applied only in
// part is a failure.
func (m *reloadMetrics) record(err error) {
	if err != nil {
		m.total.WithLabelValues("failure").Inc()
		m.lastOK.Set(0)
		return
	}
	m.total.WithLabelValues("success").Inc()
	m.lastOK.Set(1)
	m.lastSuccess.SetToCurrentTime()
}

func (m *reloadMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.total, m.lastOK, m.lastSuccess}
}

// runtimeJobsGauge reports the runtime jobs this replica schedules and
// those it refuses (stored, but invalid against its configuration: alert on
// refused > 0, the log says why). No series while runtime jobs are off.
func runtimeJobsGauge(d *Daemon) prometheus.Collector {
	return &runtimeJobsCollector{d: d, desc: prometheus.NewDesc("cronlock_runtime_jobs",
		"Runtime jobs as this replica sees them, by state: scheduled, or refused (stored but not valid against this replica's configuration, as the log says).",
		[]string{"state"}, nil)}
}

type runtimeJobsCollector struct {
	d    *Daemon
	desc *prometheus.Desc
}

func (c *runtimeJobsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *runtimeJobsCollector) Collect(ch chan<- prometheus.Metric) {
	r := c.d.runtime.Load()
	if r == nil {
		return
	}
	r.mu.Lock()
	scheduled, refused := len(r.jobs), len(r.refused)
	r.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(scheduled), "scheduled")
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(refused), "refused")
}

// registerMetrics adds to the daemon's registry the Go runtime and process
// collectors and cronlock's own metrics; the scheduler registers its own.
func (d *Daemon) registerMetrics() error {
	d.reloads = newReloadMetrics()
	connected := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "cronlock_nats_connected",
		Help: "1 while the NATS connection is up, else 0. No job starts while it is 0.",
	}, func() float64 {
		if d.connected() {
			return 1
		}
		return 0
	})
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "cronlock_build_info",
		Help: "Always 1; the labels say which cronlock is running: version, VCS revision and Go version.",
		ConstLabels: prometheus.Labels{
			"version":   Version(),
			"revision":  Revision(),
			"goversion": runtime.Version(),
		},
	})
	info.Set(1)
	cs := []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		connected, info, runtimeJobsGauge(d),
	}
	for _, c := range append(cs, d.reloads.collectors()...) {
		if err := d.reg.Register(c); err != nil {
			return err
		}
	}
	d.reloads.loaded()
	return nil
}
