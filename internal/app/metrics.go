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
		if d.connected() {
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

// retractableRegisterer registers on reg and remembers what, so that an
// attempt at creating the scheduler that fails after registering its
// metrics can be undone and tried again on the same registry.
type retractableRegisterer struct {
	reg  prometheus.Registerer
	done []prometheus.Collector
}

func (r *retractableRegisterer) Register(c prometheus.Collector) error {
	if err := r.reg.Register(c); err != nil {
		return err
	}
	r.done = append(r.done, c)
	return nil
}

func (r *retractableRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

func (r *retractableRegisterer) Unregister(c prometheus.Collector) bool { return r.reg.Unregister(c) }

// retract unregisters everything registered through r.
func (r *retractableRegisterer) retract() {
	for _, c := range r.done {
		r.reg.Unregister(c)
	}
	r.done = nil
}
