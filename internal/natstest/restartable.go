package natstest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
)

// Restartable is a single JetStream server that a test stops and starts
// again on the same port and store, as when the NATS host is killed and
// comes back.
type Restartable struct {
	tb   testing.TB
	opts *server.Options
	mu   sync.Mutex
	srv  *server.Server
}

// RunRestartable starts a server as RunServer does, on a fixed free port so
// that a restart keeps its URL. It is shut down by t.Cleanup.
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
	tb.Cleanup(r.Stop)
	return r
}

// ClientURL is the server's URL, the same across restarts.
func (r *Restartable) ClientURL() string {
	return fmt.Sprintf("nats://%s:%d", r.opts.Host, r.opts.Port)
}

// Stop shuts the server down (if running) and waits until it is gone.
func (r *Restartable) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.srv != nil {
		r.srv.Shutdown()
		r.srv.WaitForShutdown()
		r.srv = nil
	}
}

// Start starts the server again (if stopped) with its port and store.
func (r *Restartable) Start() {
	r.tb.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.srv == nil {
		r.srv = start(r.tb, r.opts.Clone())
	}
}
