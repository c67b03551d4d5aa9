package notify

import (
	"context"
	"github.com/cronlock/cronlock/internal/testlog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/config"
)

// closeTimeout bounds how long a test waits for deliveries to finish. It is
// generous: the test machine is slow and shared.
const closeTimeout = 30 * time.Second

// fixture is a Notifier with its own registry and log buffer.
type fixture struct {
	*Notifier
	reg *prometheus.Registry
	log *testlog.Buffer
}

// newFixture starts a Notifier with fast retries (opts fields left zero get
// test defaults: Backoff 10ms) and the given targets for job "backup". The
// Notifier is closed at the end of the test.
func newFixture(t *testing.T, opts Options, targets ...config.NotifyTarget) *fixture {
	t.Helper()
	f := &fixture{reg: prometheus.NewRegistry(), log: &testlog.Buffer{}}
	opts.Registerer = f.reg
	opts.Logger = zerolog.New(f.log)
	if opts.Backoff == 0 {
		opts.Backoff = 10 * time.Millisecond
	}
	n, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	f.Notifier = n
	t.Cleanup(func() {
		// Tests wait with f.close; here, abort whatever still hangs.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = n.Close(ctx)
	})
	if err := n.SetTargets(map[string][]config.NotifyTarget{"backup": targets}); err != nil {
		t.Fatal(err)
	}
	return f
}

// close waits for every queued delivery to finish.
func (f *fixture) close(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	if err := f.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// counter returns the value of the counter name{job="backup"}, 0 if absent.
func (f *fixture) counter(t *testing.T, name string) float64 {
	t.Helper()
	mfs, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "job" && l.GetValue() == "backup" {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// wantCounters checks the sent and failed counters of job "backup".
func (f *fixture) wantCounters(t *testing.T, sent, failed float64) {
	t.Helper()
	if got := f.counter(t, "cronlock_notifications_sent_total"); got != sent {
		t.Errorf("cronlock_notifications_sent_total = %v, want %v", got, sent)
	}
	if got := f.counter(t, "cronlock_notifications_failed_total"); got != failed {
		t.Errorf("cronlock_notifications_failed_total = %v, want %v\nlog:\n%s", got, failed, f.log)
	}
}
