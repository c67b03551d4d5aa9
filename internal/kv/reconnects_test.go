package kv_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/kv"
	"github.com/cronlock/cronlock/internal/natstest"
)

// A context bound before the client reconnects ends with ErrReconnected
// at the reconnect; one bound after it, or released, does not; and Stop
// ends the following.
func TestReconnectsEndBoundCalls(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	proxy := natstest.NewProxy(t, strings.TrimPrefix(url, "nats://"))
	nc, _ := natstest.Connect(t, proxy.URL())
	r := kv.NewReconnects(nc)
	r.Start()
	inFlight, cancel := r.Bound(context.Background())
	defer cancel()
	released, release := r.Bound(context.Background())
	release()

	proxy.Cut()
	select {
	case <-inFlight.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a call in flight was not ended by the reconnect")
	}
	if cause := context.Cause(inFlight); !errors.Is(cause, kv.ErrReconnected) {
		t.Errorf("cause %v, want ErrReconnected", cause)
	}
	if !errors.Is(context.Cause(released), context.Canceled) || errors.Is(context.Cause(released), kv.ErrReconnected) {
		t.Errorf("a released call's cause %v, want only its own cancel", context.Cause(released))
	}
	after, cancelAfter := r.Bound(context.Background())
	defer cancelAfter()
	r.Stop()
	proxy.Cut()
	for deadline := time.Now().Add(10 * time.Second); nc.Stats().Reconnects < 2 || !nc.IsConnected(); {
		if time.Now().After(deadline) {
			t.Fatal("the client did not reconnect a second time")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if after.Err() != nil {
		t.Errorf("a call bound after the reconnect ended: %v", context.Cause(after))
	}
}
