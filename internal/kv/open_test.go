package kv_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/cronlock/cronlock/internal/jsapi"
	"github.com/cronlock/cronlock/internal/kv"
	"github.com/cronlock/cronlock/internal/natstest"
)

// TestOpenResendsALostRequest: a JetStream API request lost on the way (a
// dropped connection here; a leader change in a cluster) is never
// answered. Open must send it again after jsapi.Attempt instead of
// waiting out its whole context.
func TestOpenResendsALostRequest(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t, natstest.Options{})
	proxy := natstest.NewProxy(t, srv.Addr().String())
	_, js := natstest.Connect(t, proxy.URL())
	ctx, cancel := context.WithTimeout(context.Background(), 4*jsapi.Attempt)
	defer cancel()

	proxy.Freeze()
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		_, err := kv.Open(ctx, js, kv.Config{Name: "lost"})
		done <- err
	}()
	for !proxy.Holding("$JS.API") {
		select {
		case err := <-done:
			t.Fatalf("Open returned %v while its request was held", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	proxy.Cut() // the held request dies with the connection
	proxy.Thaw()
	if err := <-done; err != nil {
		t.Fatalf("Open: %v (after %v)", err, time.Since(start))
	}
	if took := time.Since(start); took < jsapi.Attempt {
		t.Fatalf("Open took %v: its first request was not the one lost, the test proves nothing", took)
	}
}

// TestOpenWithoutJetStreamFailsAtOnce: a server without JetStream is not a
// cluster settling; waiting would not mend it, so Open says so at once.
func TestOpenWithoutJetStreamFailsAtOnce(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t, natstest.Options{Configure: func(o *server.Options) { o.JetStream = false }})
	_, js := natstest.Connect(t, srv.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), 4*jsapi.Attempt)
	defer cancel()
	start := time.Now()
	_, err := kv.Open(ctx, js, kv.Config{Name: "nojs"})
	if err == nil {
		t.Fatal("Open succeeded on a server without JetStream")
	}
	if took := time.Since(start); took > jsapi.Attempt/2 {
		t.Fatalf("Open took %v to fail (%v): it waited for a JetStream that is not there", took, err)
	}
	if !strings.Contains(err.Error(), "is JetStream enabled") {
		t.Errorf("error %q does not say what to check", err)
	}
}
