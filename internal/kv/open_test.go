package kv_test

import (
	"context"
	"testing"
	"time"

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
