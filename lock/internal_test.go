package lock

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
)

func newTestLocker(t *testing.T) *Locker {
	t.Helper()
	s := natstest.RunServer(t, natstest.Options{})
	_, js := natstest.Connect(t, s.ClientURL())
	l, err := New(context.Background(), js, Options{LeaseDuration: time.Second, RenewInterval: 300 * time.Millisecond,
		AcquireRetryBaseDelay: 10 * time.Millisecond, AcquireRetryMaxDelay: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// An acquire whose write landed but whose reply was lost recognises its own
// record on the retry instead of locking itself out until the TTL.
func TestLostAcquireReplyRecognised(t *testing.T) {
	t.Parallel()
	l := newTestLocker(t)
	ctx := context.Background()
	a := &attempt{l: l, key: "k", owner: "me", id: "attempt-1"}
	landed, err := l.write(ctx, "k", "attempt-1", record{Owner: "me", Lease: "attempt-1"}.encode(), 0)
	if err != nil {
		t.Fatal(err)
	}
	a.uncertain = true // the client never heard the acknowledgement

	lease, err := a.try(ctx, false)
	if err != nil || lease == nil {
		t.Fatalf("retry after a lost reply: lease %v, err %v", lease, err)
	}
	defer lease.Close()
	if lease.Token() != landed {
		t.Errorf("token %d, want the landed write's revision %d", lease.Token(), landed)
	}
	if _, err := l.Acquire(ctx, "k", WithTimeout(100*time.Millisecond)); !errors.Is(err, ErrNotAcquired) {
		t.Errorf("others: %v, want ErrNotAcquired", err)
	}
}

// A write that landed after the caller gave up is freed at once.
func TestAbandonFreesLandedWrite(t *testing.T) {
	t.Parallel()
	l := newTestLocker(t)
	ctx := context.Background()
	a := &attempt{l: l, key: "k", owner: "me", id: "attempt-2", uncertain: true}
	if _, err := l.write(ctx, "k", "attempt-2", record{Owner: "me", Lease: "attempt-2"}.encode(), 0); err != nil {
		t.Fatal(err)
	}
	a.abandon()
	if _, err := l.Holder(ctx, "k"); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("after abandon: %v, want ErrNotHeld", err)
	}
	// Someone else's record is never touched.
	other := &attempt{l: l, key: "k", owner: "me", id: "attempt-3", uncertain: true}
	if _, err := l.write(ctx, "k", "someone-else", record{Owner: "x", Lease: "someone-else"}.encode(), l.mustRev(t, "k")); err != nil {
		t.Fatal(err)
	}
	other.abandon()
	if _, err := l.Holder(ctx, "k"); err != nil {
		t.Fatalf("abandon freed another owner's key: %v", err)
	}
}

// A renewal whose reply was lost leaves a newer revision of the same lease
// on the key; the next renewal must adopt it, not declare the lease lost.
func TestLostRenewalReplyKeepsLease(t *testing.T) {
	t.Parallel()
	l := newTestLocker(t)
	ctx := context.Background()
	lease, err := l.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Close()
	// Simulate the landed renewal the client never heard of.
	if _, err := l.write(ctx, "k", lease.id, lease.rec.encode(), l.mustRev(t, "k")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lease.Done():
		t.Fatalf("lease lost after a lost renewal reply: %v", lease.Err())
	case <-time.After(1500 * time.Millisecond): // several renewals, past the 1 s lease
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Holder(ctx, "k"); !errors.Is(err, ErrNotHeld) {
		t.Errorf("after release: %v", err)
	}
}

func (l *Locker) mustRev(t *testing.T, key string) uint64 {
	t.Helper()
	e, err := l.last(context.Background(), key)
	if err != nil || e == nil {
		t.Fatalf("last(%q): %v %v", key, e, err)
	}
	return e.rev
}

func TestBackoffBounds(t *testing.T) {
	t.Parallel()
	base, max := 50*time.Millisecond, 500*time.Millisecond
	for n := range 12 {
		for range 100 {
			d := backoff(n, base, max)
			if d < base || d > max {
				t.Fatalf("backoff(%d) = %v outside [%v, %v]", n, d, base, max)
			}
			if ceil := base << n; n < 4 && d > ceil {
				t.Fatalf("backoff(%d) = %v above %v", n, d, ceil)
			}
		}
	}
}

func FuzzDecodeRecord(f *testing.F) {
	f.Add([]byte(`{"owner":"host:1","lease":"abc","token":7,"acquired_at":"2026-01-01T00:00:00Z","expires_at":"2026-01-01T00:00:20Z"}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := decodeRecord(data)
		if err != nil {
			return
		}
		if r.Lease == "" {
			t.Fatal("decoded a record without lease id")
		}
		back, err := decodeRecord(r.encode())
		if err != nil || back.Lease != r.Lease || back.Owner != r.Owner || back.Token != r.Token {
			t.Fatalf("round trip: %+v -> %+v, %v", r, back, err)
		}
	})
}

func FuzzValidateKey(f *testing.F) {
	for _, s := range []string{"a", "jobs.daily", "a..b", ".x", "x.", "a*", "a b", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		if ValidateKey(key) != nil {
			return
		}
		for i := 0; i < len(key); i++ {
			c := key[i]
			ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '=' || c == '/' || c == '.'
			if !ok {
				t.Fatalf("accepted %q with %q", key, c)
			}
		}
		if key[0] == '.' || key[len(key)-1] == '.' {
			t.Fatalf("accepted %q", key)
		}
	})
}

// TestLeaseDurationBound: a lease over MaxLeaseDuration is refused.
func TestLeaseDurationBound(t *testing.T) {
	t.Parallel()
	if _, err := (Options{LeaseDuration: MaxLeaseDuration}).withDefaults(); err != nil {
		t.Errorf("MaxLeaseDuration: %v", err)
	}
	_, err := Options{LeaseDuration: 2562047 * time.Hour}.withDefaults()
	if err == nil || !strings.Contains(err.Error(), "Options.LeaseDuration 2562047h0m0s: must be at most 1h0m0s") {
		t.Errorf("2562047h: %v", err)
	}
}
