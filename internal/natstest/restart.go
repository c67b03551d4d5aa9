package natstest

import (
	"testing"

	"github.com/nats-io/nats-server/v2/server"
)

// Restartable is a single JetStream server that can be stopped and started
// again on the same port and store, as after an outage of the NATS host:
// clients reconnect to the same URL and find what the store kept.
type Restartable struct {
	tb   testing.TB
	opts *server.Options
	s    *server.Server
	url  string
}

// RunRestartable starts a server like RunServer, on a fixed port so that it
// can come back under the same URL.
func RunRestartable(tb testing.TB, o Options) *Restartable {
	tb.Helper()
	opts := &server.Options{
		Host:      "127.0.0.1",
		Port:      freePorts(tb, 1)[0],
		JetStream: true,
		StoreDir:  tb.TempDir(),
		NoLog:     true,
		NoSigs:    true,
	}
	if o.Configure != nil {
		o.Configure(opts)
	}
	r := &Restartable{tb: tb, opts: opts}
	r.Start()
	r.url = r.s.ClientURL()
	tb.Cleanup(r.Stop)
	return r
}

// URL is the server's client URL, the same across restarts.
func (r *Restartable) URL() string { return r.url }

// Stop shuts the server down (cleanly: the store is flushed) and waits
// until it is gone. Stopping a stopped server does nothing.
func (r *Restartable) Stop() {
	if r.s != nil {
		r.s.Shutdown()
		r.s.WaitForShutdown()
		r.s = nil
	}
}

// Start starts a stopped server again with its port and store; it returns
// once the server accepts connections (JetStream has recovered the store).
func (r *Restartable) Start() {
	r.tb.Helper()
	if r.s == nil {
		r.s = start(r.tb, r.opts.Clone())
	}
}
