package natstest

import (
	"context"
	"testing"
	"time"

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

// KeepPastTTL stands in for what a server restarted after a crash can keep
// (nats-server#8505): it writes values under their keys in the KV bucket
// without a TTL, restarts the server, waits until age has passed since the
// writes, and fails the test unless the bucket still holds every key (a
// test relying on them would prove nothing). It returns when the server was
// back.
func (r *Restartable) KeepPastTTL(tb testing.TB, bucket string, values map[string][]byte, age time.Duration) time.Time {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, js := Connect(tb, r.URL())
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		tb.Fatal(err)
	}
	written := time.Now()
	for k, v := range values {
		if _, err := kv.Put(ctx, k, v); err != nil {
			tb.Fatal(err)
		}
	}
	r.Stop()
	r.Start()
	back := time.Now()
	time.Sleep(time.Until(written.Add(age)))
	for k := range values {
		if _, err := kv.Get(ctx, k); err != nil {
			tb.Fatalf("natstest: the bucket no longer holds %q (%v): a test relying on it proves nothing", k, err)
		}
	}
	return back
}
