package lock_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/lock"
)

// testOpts are short leases so the suite stays fast: 1 s lease, renewal
// every 300 ms, local safe deadline at 900 ms.
func testOpts() lock.Options {
	return lock.Options{
		LeaseDuration:         time.Second,
		RenewInterval:         300 * time.Millisecond,
		AcquireRetryBaseDelay: 10 * time.Millisecond,
		AcquireRetryMaxDelay:  100 * time.Millisecond,
	}
}

func newServer(t testing.TB) string {
	t.Helper()
	return natstest.RunServer(t, natstest.Options{}).ClientURL()
}

// newLocker connects on its own connection and returns a Locker closed at
// the end of the test.
func newLocker(t testing.TB, url string, o lock.Options) (*lock.Locker, jetstream.JetStream) {
	t.Helper()
	_, js := natstest.Connect(t, url)
	// Generous: on a freshly started 3-node cluster, with CI's other
	// packages loading both cores, creating the watch's consumer on the R3
	// bucket once took over 10 s (stream leader still being elected).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := lock.New(ctx, js, o)
	if err != nil {
		t.Fatalf("lock.New: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l, js
}

func mustAcquire(t testing.TB, l *lock.Locker, key string, opts ...lock.AcquireOption) *lock.Lease {
	t.Helper()
	lease, err := l.Acquire(context.Background(), key, opts...)
	if err != nil {
		t.Fatalf("Acquire(%q): %v", key, err)
	}
	t.Cleanup(func() { lease.Close() })
	return lease
}

// waitClosed waits for ch with a generous bound (a loaded 2-core machine).
func waitClosed(t testing.TB, ch <-chan struct{}, d time.Duration, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(d):
		t.Fatalf("%s: not within %v", what, d)
	}
}
