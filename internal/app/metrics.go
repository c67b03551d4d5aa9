package app

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// registerMetrics adds to the daemon's registry the Go runtime and process
// collectors and cronlock's own metrics; the scheduler registers its own.
func (d *Daemon) registerMetrics() error {
	d.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "cronlock_config_reloads_total",
		Help: "Configuration reloads on SIGHUP, by result (success, failure).",
	}, []string{"result"})
	connected := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "cronlock_nats_connected",
		Help: "1 while the NATS connection is up, else 0. No job starts while it is 0.",
	}, func() float64 {
		if d.conn.Connected() {
			return 1
		}
		return 0
	})
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "cronlock_build_info",
		Help:        "Always 1; the version label is cronlock's version.",
		ConstLabels: prometheus.Labels{"version": Version()},
	})
	info.Set(1)
	for _, c := range []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		d.reloads, connected, info,
	} {
		if err := d.reg.Register(c); err != nil {
			return err
		}
	}
	// Both results show up as 0 before the first reload.
	d.reloads.WithLabelValues("success")
	d.reloads.WithLabelValues("failure")
	return nil
}
