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
		connected, info,
	}
	for _, c := range append(cs, d.reloads.collectors()...) {
		if err := d.reg.Register(c); err != nil {
			return err
		}
	}
	d.reloads.loaded()
	return nil
}
