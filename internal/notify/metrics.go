package notify

import "github.com/prometheus/client_golang/prometheus"

// metrics are the Notifier's Prometheus collectors. They always exist; they
// are registered only when Options.Registerer is set. Labels are kept to the
// job name so that their number is bounded by the configuration.
type metrics struct {
	sent   *prometheus.CounterVec // job
	failed *prometheus.CounterVec // job
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cronlock_notifications_sent_total", Help: "Notifications delivered by this replica, by job.",
		}, []string{"job"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cronlock_notifications_failed_total",
			Help: "Notifications this replica did not deliver (all attempts failed, or dropped), by job.",
		}, []string{"job"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.sent, m.failed} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
