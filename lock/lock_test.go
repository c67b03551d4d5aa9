package lock_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/lock"
)

func TestOptionsValidation(t *testing.T) {
	t.Parallel()
	url := newServer(t)
	_, js := natstest.Connect(t, url)
	cases := []struct {
		name string
		o    lock.Options
		want string
	}{
		{"sub-second lease", lock.Options{LeaseDuration: 500 * time.Millisecond}, "LeaseDuration 500ms: must be at least 1s"},
		{"fractional lease", lock.Options{LeaseDuration: 1500 * time.Millisecond}, "whole number of seconds"},
		{"renew equals lease", lock.Options{LeaseDuration: 2 * time.Second, RenewInterval: 2 * time.Second}, "RenewInterval 2s: must be shorter than LeaseDuration"},
		{"renew past safe deadline", lock.Options{LeaseDuration: 10 * time.Second, RenewInterval: 9500 * time.Millisecond}, "safety margin"},
		{"negative renew", lock.Options{RenewInterval: -time.Second}, "RenewInterval -1s: must not be negative"},
		{"base above max", lock.Options{AcquireRetryBaseDelay: time.Second, AcquireRetryMaxDelay: 100 * time.Millisecond}, "AcquireRetryBaseDelay 1s: must not exceed"},
		{"negative base", lock.Options{AcquireRetryBaseDelay: -1}, "must not be negative"},
		{"replicas", lock.Options{Replicas: 7}, "Replicas 7"},
		{"bucket name", lock.Options{Bucket: "my locks"}, `Bucket "my locks"`},
	}
	for _, c := range cases {
		_, err := lock.New(context.Background(), js, c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want error containing %q", c.name, err, c.want)
		}
	}
	// Zero values take the defaults; the renew interval follows the lease.
	l, err := lock.New(context.Background(), js, lock.Options{LeaseDuration: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	o := l.Options()
	if o.Bucket != "locks" || o.RenewInterval != 2*time.Second || o.AcquireRetryBaseDelay != 50*time.Millisecond ||
		o.AcquireRetryMaxDelay != 500*time.Millisecond || o.Replicas != 1 || o.OwnerID != lock.DefaultOwnerID() {
		t.Errorf("defaults: %+v", o)
	}
	if l.DefaultAcquireTimeout() != 750*time.Millisecond {
		t.Errorf("default acquire timeout %v, want 750ms", l.DefaultAcquireTimeout())
	}
}

func TestDefaultOptions(t *testing.T) {
	t.Parallel()
	l, _ := newLocker(t, newServer(t), lock.Options{})
	o := l.Options()
	if o.LeaseDuration != 20*time.Second || o.RenewInterval != 10*time.Second {
		t.Errorf("lease %v renew %v, want 20s 10s", o.LeaseDuration, o.RenewInterval)
	}
}

func TestValidateKey(t *testing.T) {
	t.Parallel()
	for _, k := range []string{"a", "jobs.daily", "cache-warmup_users", "a/b=c", strings.Repeat("k", 256)} {
		if err := lock.ValidateKey(k); err != nil {
			t.Errorf("ValidateKey(%q): %v", k, err)
		}
	}
	bad := map[string]string{
		"":                       "must not be empty",
		".a":                     "start or end",
		"a.":                     "start or end",
		"a..b":                   "empty token",
		"a b":                    `' '`,
		"a*":                     `'*'`,
		"a.>":                    `'>'`,
		"ü":                      "not allowed",
		strings.Repeat("k", 257): "longer than 256",
	}
	for k, want := range bad {
		err := lock.ValidateKey(k)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), fmt.Sprintf("%q", k)) {
			t.Errorf("ValidateKey(%q) = %v, want error naming the key and %q", k, err, want)
		}
	}
	l, _ := newLocker(t, newServer(t), testOpts())
	if _, err := l.Acquire(context.Background(), "bad key"); err == nil || !strings.Contains(err.Error(), `"bad key"`) {
		t.Errorf("Acquire with a bad key: %v", err)
	}
}

func TestAcquireRelease(t *testing.T) {
	t.Parallel()
	url := newServer(t)
	l, _ := newLocker(t, url, testOpts())
	ctx := context.Background()

	lease := mustAcquire(t, l, "jobs.a", lock.WithOwner("worker-1"))
	if lease.Key() != "jobs.a" || lease.Owner() != "worker-1" || lease.Token() == 0 || lease.Err() != nil {
		t.Fatalf("lease: key %q owner %q token %d err %v", lease.Key(), lease.Owner(), lease.Token(), lease.Err())
	}
	h, err := l.Holder(ctx, "jobs.a")
	if err != nil {
		t.Fatal(err)
	}
	if h.Owner != "worker-1" || h.Token != lease.Token() || h.Key != "jobs.a" {
		t.Errorf("holder %+v, lease token %d", h, lease.Token())
	}
	if d := time.Until(h.ExpiresAt); d <= 0 || d > 2*time.Second {
		t.Errorf("holder expires in %v, want within the 1s lease", d)
	}
	list, err := l.List(ctx)
	if err != nil || len(list) != 1 || list[0].Key != "jobs.a" {
		t.Errorf("List = %+v, %v", list, err)
	}

	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, lease.Done(), time.Second, "Done after Release")
	if lease.Err() != nil {
		t.Errorf("Err after a clean release = %v, want nil", lease.Err())
	}
	if err := lease.Release(ctx); err != nil {
		t.Errorf("second Release = %v, want nil (idempotent)", err)
	}
	if _, err := l.Holder(ctx, "jobs.a"); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Holder after release = %v, want ErrNotHeld", err)
	}
	if list, _ := l.List(ctx); len(list) != 0 {
		t.Errorf("List after release = %+v", list)
	}

	// Right after a release the key is free for anyone at once.
	again := mustAcquire(t, l, "jobs.a")
	if again.Token() <= lease.Token() {
		t.Errorf("token %d after %d: fencing tokens must increase", again.Token(), lease.Token())
	}
}

func TestContentionNamesHolder(t *testing.T) {
	t.Parallel()
	url := newServer(t)
	a, _ := newLocker(t, url, lock.Options{LeaseDuration: time.Second, RenewInterval: 300 * time.Millisecond, OwnerID: "alpha:1"})
	b, _ := newLocker(t, url, lock.Options{LeaseDuration: time.Second, RenewInterval: 300 * time.Millisecond, OwnerID: "beta:2"})
	held := mustAcquire(t, a, "k")

	start := time.Now()
	_, err := b.Acquire(context.Background(), "k")
	if !errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("Acquire while held = %v, want ErrNotAcquired", err)
	}
	if waited := time.Since(start); waited < 700*time.Millisecond {
		t.Errorf("gave up after %v, want the default timeout of 750ms", waited)
	}
	if !strings.Contains(err.Error(), "alpha:1") || !strings.Contains(err.Error(), fmt.Sprint(held.Token())) {
		t.Errorf("error %q does not name the holder alpha:1 and its token", err)
	}
	// Same owner id in another Locker: still excluded (an owner id is a label).
	c, _ := newLocker(t, url, lock.Options{LeaseDuration: time.Second, RenewInterval: 300 * time.Millisecond, OwnerID: "alpha:1"})
	if _, err := c.Acquire(context.Background(), "k", lock.WithTimeout(100*time.Millisecond)); !errors.Is(err, lock.ErrNotAcquired) {
		t.Errorf("same owner id, other Locker: %v, want ErrNotAcquired", err)
	}
	// And in the same Locker, from another goroutine.
	if _, err := a.Acquire(context.Background(), "k", lock.WithTimeout(100*time.Millisecond)); !errors.Is(err, lock.ErrNotAcquired) {
		t.Errorf("same Locker again: %v, want ErrNotAcquired", err)
	}
}

func TestAcquireContext(t *testing.T) {
	t.Parallel()
	url := newServer(t)
	l, _ := newLocker(t, url, testOpts())
	mustAcquire(t, l, "k")

	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	_, err := l.Acquire(ctx, "k", lock.WithTimeout(10*time.Second))
	if !errors.Is(err, context.Canceled) || errors.Is(err, lock.ErrNotAcquired) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
	done, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if _, err := l.Acquire(done, "free"); !errors.Is(err, context.Canceled) {
		t.Errorf("already cancelled: %v", err)
	}

	// The context bounds the acquisition only: the lease outlives it.
	actx, acancel := context.WithCancel(context.Background())
	lease, err := l.Acquire(actx, "other")
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Close()
	acancel()
	select {
	case <-lease.Done():
		t.Fatal("lease ended with the acquire context")
	case <-time.After(1500 * time.Millisecond): // past one lease: renewal kept it
	}
}

func TestNATSFailureIsNotContention(t *testing.T) {
	t.Parallel()
	s := natstest.RunServer(t, natstest.Options{})
	l, _ := newLocker(t, s.ClientURL(), testOpts())
	s.Shutdown()
	_, err := l.Acquire(context.Background(), "k", lock.WithTimeout(500*time.Millisecond))
	if err == nil || errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("Acquire with the server down = %v, want a NATS error that is not ErrNotAcquired", err)
	}
}

func TestHandoverWakesWaiter(t *testing.T) {
	t.Parallel()
	url := newServer(t)
	// Backoff of 10 s: only the bucket watch can wake the waiter in time.
	slow := lock.Options{LeaseDuration: 2 * time.Second, RenewInterval: time.Second,
		AcquireRetryBaseDelay: 10 * time.Second, AcquireRetryMaxDelay: 10 * time.Second}
	a, _ := newLocker(t, url, slow)
	waiting := make(chan struct{})
	var once sync.Once
	slow.Logger = zerolog.New(io.Discard).Level(zerolog.DebugLevel).Hook(zerolog.HookFunc(
		func(_ *zerolog.Event, _ zerolog.Level, msg string) {
			if msg == "lock held by another owner; waiting" {
				once.Do(func() { close(waiting) })
			}
		}))
	b, _ := newLocker(t, url, slow)
	held := mustAcquire(t, a, "k")

	got := make(chan *lock.Lease, 1)
	go func() {
		lease, err := b.Acquire(context.Background(), "k", lock.WithTimeout(30*time.Second))
		if err != nil {
			t.Error(err)
		}
		got <- lease
	}()
	// The waiter has found the key held and sleeps on its 10 s backoff.
	waitClosed(t, waiting, 10*time.Second, "waiter's first attempt")
	released := time.Now()
	if err := held.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	var lease *lock.Lease
	select {
	case lease = <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("waiter not woken by the release within 5s (its backoff is 10s)")
	}
	if lease == nil {
		return
	}
	defer lease.Close()
	t.Logf("handover took %v", time.Since(released))
	if lease.Token() <= held.Token() {
		t.Errorf("token %d not above previous %d", lease.Token(), held.Token())
	}
}

func TestCrashedHolderExpires(t *testing.T) {
	t.Parallel()
	url := newServer(t)
	slow := lock.Options{LeaseDuration: time.Second, RenewInterval: 300 * time.Millisecond,
		AcquireRetryBaseDelay: 10 * time.Second, AcquireRetryMaxDelay: 10 * time.Second}
	nc, js := natstest.Connect(t, url)
	crashing, err := lock.New(context.Background(), js, slow)
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	held, err := crashing.Acquire(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	nc.Close() // crash: no release, no renewal reaches the server
	// The crashed process's lease notices locally too (its writes fail).
	waitClosed(t, held.Done(), 5*time.Second, "crashed holder's Done")
	if !errors.Is(held.Err(), lock.ErrLeaseLost) {
		t.Errorf("crashed holder Err = %v, want ErrLeaseLost", held.Err())
	}

	w, _ := newLocker(t, url, slow)
	lease, err := w.Acquire(context.Background(), "k", lock.WithTimeout(20*time.Second))
	if err != nil {
		t.Fatalf("waiter: %v", err)
	}
	defer lease.Close()
	took := time.Since(before)
	t.Logf("taken over %v after the crashed acquire", took)
	if took < 900*time.Millisecond {
		t.Errorf("taken over after %v, before the 1s lease could expire", took)
	}
	if took > 5*time.Second {
		t.Errorf("taken over after %v: the expiry did not wake the waiter (backoff is 10s)", took)
	}
	if lease.Token() <= held.Token() {
		t.Errorf("token %d not above crashed holder's %d", lease.Token(), held.Token())
	}
	held.Release(context.Background())
}

func TestRenewalKeepsLease(t *testing.T) {
	t.Parallel()
	url := newServer(t)
	a, _ := newLocker(t, url, testOpts())
	b, _ := newLocker(t, url, testOpts())
	lease := mustAcquire(t, a, "long")
	deadline := time.Now().Add(3 * time.Second) // three leases
	for time.Now().Before(deadline) {
		if _, err := b.Acquire(context.Background(), "long", lock.WithTimeout(200*time.Millisecond)); !errors.Is(err, lock.ErrNotAcquired) {
			t.Fatalf("other Locker during renewal: %v, want ErrNotAcquired", err)
		}
		h, err := b.Holder(context.Background(), "long")
		if err != nil {
			t.Fatal(err)
		}
		if h.Token != lease.Token() {
			t.Fatalf("holder token %d changed from lease token %d across renewals", h.Token, lease.Token())
		}
	}
	if lease.Err() != nil {
		t.Fatalf("lease lost while renewing: %v", lease.Err())
	}
}

func TestForceReleaseLosesLease(t *testing.T) {
	t.Parallel()
	url := newServer(t)
	a, _ := newLocker(t, url, testOpts())
	b, _ := newLocker(t, url, testOpts())
	lease := mustAcquire(t, a, "k")
	if err := b.ForceRelease(context.Background(), "k"); err != nil {
		t.Fatal(err)
	}
	if err := b.ForceRelease(context.Background(), "k"); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("ForceRelease of a free key = %v, want ErrNotHeld", err)
	}
	other := mustAcquire(t, b, "k", lock.WithTimeout(2*time.Second))
	// The first holder's next renewal meets another revision: lost at once.
	waitClosed(t, lease.Done(), 3*time.Second, "Done after the key was taken")
	if !errors.Is(lease.Err(), lock.ErrLeaseLost) {
		t.Errorf("Err = %v, want ErrLeaseLost", lease.Err())
	}
	// Release of a lost lease is nil and never frees the new holder's key.
	if err := lease.Release(context.Background()); err != nil {
		t.Errorf("Release after loss = %v, want nil", err)
	}
	h, err := b.Holder(context.Background(), "k")
	if err != nil || h.Token != other.Token() {
		t.Errorf("after the stale Release the holder is %+v, %v; want token %d", h, err, other.Token())
	}
}

func TestPartitionedHolderLosesLeaseFirst(t *testing.T) {
	t.Parallel()
	url := newServer(t)
	proxy := natstest.NewProxy(t, strings.TrimPrefix(url, "nats://"))
	holder, _ := newLocker(t, proxy.URL(), lock.Options{LeaseDuration: 2 * time.Second, RenewInterval: 500 * time.Millisecond})
	observer, _ := newLocker(t, url, testOpts())

	lease := mustAcquire(t, holder, "k")
	proxy.Freeze() // silent network: no error, no disconnect, nothing arrives
	defer proxy.Thaw()

	waitClosed(t, lease.Done(), 5*time.Second, "partitioned holder's Done")
	lostAt := time.Now()
	if !errors.Is(lease.Err(), lock.ErrLeaseLost) {
		t.Fatalf("Err = %v, want ErrLeaseLost", lease.Err())
	}
	// The server has not yet let anyone else in: the key is still the
	// holder's when it stops.
	h, err := observer.Holder(context.Background(), "k")
	if err != nil {
		t.Fatalf("when the holder stopped, the server already freed the key (%v)", err)
	}
	if h.Token != lease.Token() {
		t.Fatalf("holder token %d, want %d", h.Token, lease.Token())
	}
	if !h.ExpiresAt.After(lostAt) {
		t.Errorf("server expiry %v not after local loss %v", h.ExpiresAt, lostAt)
	}
	// And afterwards another owner gets it.
	next := mustAcquire(t, observer, "k", lock.WithTimeout(5*time.Second))
	if next.Token() <= lease.Token() {
		t.Errorf("token %d not above %d", next.Token(), lease.Token())
	}
}

func TestMutualExclusionStress(t *testing.T) {
	t.Parallel()
	url := newServer(t)
	const lockers, cycles = 8, 25
	var inside, maxInside, total atomic.Int64
	var lastToken atomic.Uint64
	var wg sync.WaitGroup
	for i := range lockers {
		l, _ := newLocker(t, url, lock.Options{LeaseDuration: 2 * time.Second, RenewInterval: time.Second,
			AcquireRetryBaseDelay: 5 * time.Millisecond, AcquireRetryMaxDelay: 50 * time.Millisecond, OwnerID: "same-owner"})
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range cycles {
				lease, err := l.Acquire(context.Background(), "hot", lock.WithTimeout(30*time.Second))
				if err != nil {
					t.Errorf("locker %d: %v", i, err)
					return
				}
				n := inside.Add(1)
				for {
					m := maxInside.Load()
					if n <= m || maxInside.CompareAndSwap(m, n) {
						break
					}
				}
				if prev := lastToken.Swap(lease.Token()); prev >= lease.Token() {
					t.Errorf("token %d after %d", lease.Token(), prev)
				}
				time.Sleep(time.Millisecond)
				inside.Add(-1)
				total.Add(1)
				if err := lease.Release(context.Background()); err != nil {
					t.Errorf("release: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	if maxInside.Load() != 1 {
		t.Fatalf("%d holders inside the critical section at once", maxInside.Load())
	}
	if total.Load() != lockers*cycles {
		t.Fatalf("%d cycles completed, want %d", total.Load(), lockers*cycles)
	}
}

func TestAcquireAll(t *testing.T) {
	t.Parallel()
	url := newServer(t)
	a, _ := newLocker(t, url, testOpts())
	b, _ := newLocker(t, url, testOpts())
	ctx := context.Background()

	leases, err := a.AcquireAll(ctx, []string{"res.b", "res.a", "res.c"})
	if err != nil {
		t.Fatal(err)
	}
	if leases[0].Key() != "res.b" || leases[1].Key() != "res.a" || leases[2].Key() != "res.c" {
		t.Errorf("leases not in the caller's order")
	}
	for _, l := range leases {
		l.Close()
	}
	if _, err := a.AcquireAll(ctx, []string{"x", "x"}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("duplicate keys: %v", err)
	}

	// All or nothing: with res.c held elsewhere, nothing stays held.
	held := mustAcquire(t, b, "res.c")
	_, err = a.AcquireAll(ctx, []string{"res.a", "res.b", "res.c"}, lock.WithTimeout(300*time.Millisecond))
	if !errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("AcquireAll with one key held = %v", err)
	}
	for _, k := range []string{"res.a", "res.b"} {
		if h, err := b.Holder(ctx, k); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("%s still held after a failed AcquireAll: %+v %v", k, h, err)
		}
	}
	held.Close()

	// Two callers wanting overlapping sets in opposite orders never deadlock.
	var wg sync.WaitGroup
	for i, keys := range [][]string{{"p", "q", "r"}, {"r", "q", "p"}} {
		l := []*lock.Locker{a, b}[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				ls, err := l.AcquireAll(ctx, keys, lock.WithTimeout(10*time.Second))
				if err != nil {
					t.Error(err)
					return
				}
				for _, x := range ls {
					x.Release(ctx)
				}
			}
		}()
	}
	wg.Wait()
}

func TestBucketChecks(t *testing.T) {
	t.Parallel()
	url := newServer(t)
	_, js := natstest.Connect(t, url)
	ctx := context.Background()
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "nottl", History: 1}); err != nil {
		t.Fatal(err)
	}
	_, err := lock.New(ctx, js, lock.Options{Bucket: "nottl"})
	if !errors.Is(err, lock.ErrServerTooOld) || !strings.Contains(err.Error(), "2.11") || !strings.Contains(err.Error(), "nottl") {
		t.Errorf("bucket without TTLs: %v", err)
	}
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "history", History: 5, LimitMarkerTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := lock.New(ctx, js, lock.Options{Bucket: "history"}); err == nil || !strings.Contains(err.Error(), "history 1") {
		t.Errorf("bucket with history 5: %v", err)
	}
	// A bucket created by New is accepted by the next New.
	l, _ := newLocker(t, url, lock.Options{Bucket: "fresh"})
	l.Close()
	newLocker(t, url, lock.Options{Bucket: "fresh"})
	// Its value is readable JSON.
	kv, _ := js.KeyValue(ctx, "fresh")
	l2, _ := newLocker(t, url, lock.Options{Bucket: "fresh", OwnerID: "reader:7"})
	lease := mustAcquire(t, l2, "doc")
	e, err := kv.Get(ctx, "doc")
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{`"owner":"reader:7"`, `"lease":`, `"acquired_at":`, `"expires_at":`} {
		if !strings.Contains(string(e.Value()), field) {
			t.Errorf("value %s lacks %s", e.Value(), field)
		}
	}
	lease.Close()
}

func TestReleaseLeavesNoGoroutine(t *testing.T) {
	url := newServer(t)
	l, _ := newLocker(t, url, testOpts())
	mustAcquire(t, l, "warm").Close() // let the connection's own goroutines start
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	lease, err := l.Acquire(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	waitRenewed(t, l, "k")
	if err := lease.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// waitRenewed waits until the holder of key has renewed its lease at least
// once: the expiry the server reports moves later.
func waitRenewed(t *testing.T, l *lock.Locker, key string) {
	t.Helper()
	ctx := context.Background()
	first, err := l.Holder(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		h, err := l.Holder(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if h.Token != first.Token {
			t.Fatalf("%s changed hands while waiting for a renewal: %v, then %v", key, first, h)
		}
		if h.ExpiresAt.After(first.ExpiresAt) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no renewal within 10s (expiry still %v)", key, h.ExpiresAt)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestClusterLeaderLoss holds a lease on an R3 bucket in a 3-node cluster,
// kills the stream leader, and checks that no second owner ever holds the
// key while the first still believes it does.
func TestClusterLeaderLoss(t *testing.T) {
	t.Parallel()
	c := natstest.RunCluster(t, 3)
	opts := lock.Options{LeaseDuration: 2 * time.Second, RenewInterval: 500 * time.Millisecond, Replicas: 3,
		AcquireRetryBaseDelay: 20 * time.Millisecond, AcquireRetryMaxDelay: 200 * time.Millisecond}
	a, _ := newLocker(t, c.URL(), opts)
	b, _ := newLocker(t, c.URL(), opts)
	lease := mustAcquire(t, a, "ha", lock.WithTimeout(10*time.Second))

	leader := c.StreamLeader("KV_locks")
	c.Stop(leader)
	defer c.Start(leader)

	// Contend from b during and after the election; whenever b holds the
	// key, a's lease must already be over.
	end := time.Now().Add(6 * time.Second)
	for time.Now().Before(end) {
		other, err := b.Acquire(context.Background(), "ha", lock.WithTimeout(300*time.Millisecond))
		if err != nil {
			continue
		}
		select {
		case <-lease.Done():
		default:
			t.Fatalf("two holders: b got token %d while a still holds token %d", other.Token(), lease.Token())
		}
		if other.Token() <= lease.Token() {
			t.Errorf("token %d not above %d", other.Token(), lease.Token())
		}
		other.Release(context.Background())
	}
	t.Logf("after the leader loss, a's lease: err=%v", lease.Err())
}

// TestClusterContention runs the mutual exclusion check on an R3 bucket,
// where compare-and-swap conflicts come back with error code 10164.
func TestClusterContention(t *testing.T) {
	t.Parallel()
	c := natstest.RunCluster(t, 3)
	opts := lock.Options{LeaseDuration: 2 * time.Second, RenewInterval: time.Second, Replicas: 3,
		AcquireRetryBaseDelay: 5 * time.Millisecond, AcquireRetryMaxDelay: 50 * time.Millisecond}
	var inside, maxInside atomic.Int64
	var wg sync.WaitGroup
	for i := range 3 {
		_, js := natstest.Connect(t, c.URL(), nats.DontRandomize())
		_ = i
		l, err := lock.New(context.Background(), js, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 15 {
				lease, err := l.Acquire(context.Background(), "hot", lock.WithTimeout(20*time.Second))
				if err != nil {
					t.Error(err)
					return
				}
				if n := inside.Add(1); n > maxInside.Load() {
					maxInside.Store(n)
				}
				time.Sleep(time.Millisecond)
				inside.Add(-1)
				lease.Release(context.Background())
			}
		}()
	}
	wg.Wait()
	if maxInside.Load() != 1 {
		t.Fatalf("%d holders at once", maxInside.Load())
	}
}

// An acquiring write that lands after Acquire gave up (a slow link) is freed
// as soon as its acknowledgement arrives, not held for a whole lease.
func TestLateAcquireWriteIsFreed(t *testing.T) {
	t.Parallel()
	url := newServer(t)
	proxy := natstest.NewProxy(t, strings.TrimPrefix(url, "nats://"))
	o := lock.Options{LeaseDuration: 10 * time.Second, RenewInterval: 2 * time.Second}
	slow, _ := newLocker(t, proxy.URL(), o)
	observer, _ := newLocker(t, url, o)
	proxy.SetDelay(300 * time.Millisecond)
	start := time.Now()
	_, err := slow.Acquire(context.Background(), "k", lock.WithTimeout(100*time.Millisecond))
	if err == nil || errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("Acquire over a 300 ms link with a 100 ms timeout = %v, want a NATS timeout", err)
	}
	// The write lands ~300 ms in; then it must be freed, long before the 10 s lease.
	sawHeld := false
	for time.Since(start) < 5*time.Second {
		_, err := observer.Holder(context.Background(), "k")
		if err == nil {
			sawHeld = true
		} else if errors.Is(err, lock.ErrNotHeld) && sawHeld {
			t.Logf("late write freed %v after the acquire started", time.Since(start))
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the late write was not freed within 5 s (seen held: %v)", sawHeld)
}

// A lease hears of a force-release from its Locker's watch at once, not at
// its next renewal: Done closes, Context is cancelled with ErrLeaseLost and
// the deadline collapses to the moment of the loss.
func TestForceReleaseEndsLeaseAtOnce(t *testing.T) {
	t.Parallel()
	url := newServer(t)
	ctx := context.Background()
	// Renewal every 4 s: only the watch can end the lease within the bound.
	holder, _ := newLocker(t, url, lock.Options{LeaseDuration: 5 * time.Second, RenewInterval: 4 * time.Second})
	op, _ := newLocker(t, url, lock.Options{LeaseDuration: 5 * time.Second})
	lease, err := holder.Acquire(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Close()
	before, moved := lease.Deadline()
	if err := op.ForceRelease(ctx, "job"); err != nil {
		t.Fatal(err)
	}
	purged := time.Now()
	select {
	case <-lease.Done():
	case <-time.After(3 * time.Second):
		t.Fatal("lease still held 3 s after a force-release")
	}
	if d := time.Since(purged); d > 500*time.Millisecond {
		t.Errorf("lease ended %v after the purge, want < 500 ms", d)
	}
	if !errors.Is(lease.Err(), lock.ErrLeaseLost) || !errors.Is(context.Cause(lease.Context()), lock.ErrLeaseLost) {
		t.Errorf("Err %v, Context cause %v; want ErrLeaseLost", lease.Err(), context.Cause(lease.Context()))
	}
	select {
	case <-moved:
	default:
		t.Error("Deadline's channel not closed by the loss")
	}
	if after, _ := lease.Deadline(); !after.Before(before) {
		t.Errorf("deadline after the loss %v, want earlier than %v", after, before)
	}
}

// A renewal moves the local safe deadline and says so; a release cancels
// Context with context.Canceled.
func TestLeaseDeadlineAndContext(t *testing.T) {
	t.Parallel()
	url := newServer(t)
	l, _ := newLocker(t, url, lock.Options{LeaseDuration: 2 * time.Second, RenewInterval: 300 * time.Millisecond})
	lease, err := l.Acquire(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	first, moved := lease.Deadline()
	if until := time.Until(first); until <= 0 || until > 2*time.Second {
		t.Fatalf("first deadline in %v, want within the 2 s lease", until)
	}
	select {
	case <-moved:
	case <-time.After(3 * time.Second):
		t.Fatal("no renewal moved the deadline within 3 s")
	}
	if next, _ := lease.Deadline(); !next.After(first) {
		t.Errorf("deadline after a renewal %v, want later than %v", next, first)
	}
	if err := lease.Context().Err(); err != nil {
		t.Fatalf("Context done while held: %v", err)
	}
	if err := lease.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if cause := context.Cause(lease.Context()); !errors.Is(cause, context.Canceled) {
		t.Errorf("Context cause after release %v, want context.Canceled", cause)
	}
}

// ErrNotAcquired comes as a *NotAcquiredError naming the holder.
func TestNotAcquiredErrorNamesHolder(t *testing.T) {
	t.Parallel()
	url := newServer(t)
	a, _ := newLocker(t, url, lock.Options{OwnerID: "replica-a"})
	b, _ := newLocker(t, url, lock.Options{OwnerID: "replica-b"})
	lease, err := a.Acquire(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Close()
	_, err = b.Acquire(context.Background(), "k", lock.WithTimeout(200*time.Millisecond))
	var nae *lock.NotAcquiredError
	if !errors.Is(err, lock.ErrNotAcquired) || !errors.As(err, &nae) {
		t.Fatalf("err %v (%T), want a *lock.NotAcquiredError matching ErrNotAcquired", err, err)
	}
	if nae.Holder.Owner != "replica-a" || nae.Holder.Token != lease.Token() || nae.Key != "k" {
		t.Errorf("holder %+v key %q, want replica-a with token %d on k", nae.Holder, nae.Key, lease.Token())
	}
}

// A release that NATS does not take (no stream leader, a lost connection)
// frees the key as soon as NATS answers again, not at the lease's expiry.
func TestFailedReleaseFreesOnceNATSAnswers(t *testing.T) {
	t.Parallel()
	url := newServer(t)
	proxy := natstest.NewProxy(t, strings.TrimPrefix(url, "nats://"))
	o := lock.Options{LeaseDuration: 20 * time.Second, RenewInterval: 5 * time.Second}
	// Without a reconnect buffer a write made while disconnected fails at
	// once and is never sent: the release is really lost, as when the
	// stream has no leader to take it.
	_, js := natstest.Connect(t, proxy.URL(), nats.ReconnectBufSize(-1))
	holder, err := lock.New(context.Background(), js, o)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	other, _ := newLocker(t, url, o)
	lease, err := holder.Acquire(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	proxy.Freeze() // reconnect attempts hang
	proxy.Cut()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	err = lease.Release(ctx)
	cancel()
	if err == nil {
		t.Fatal("Release while disconnected succeeded; the test cannot tell the retry from it")
	}
	time.Sleep(time.Second)
	if _, err := other.Holder(context.Background(), "k"); err != nil {
		t.Fatalf("the key should still be held while the holder is cut off: %v", err)
	}
	proxy.Thaw()
	back := time.Now()
	l2, err := other.Acquire(context.Background(), "k", lock.WithTimeout(5*time.Second))
	if err != nil {
		t.Fatalf("the key was still held 5 s after NATS answered again (lease 20 s): %v", err)
	}
	defer l2.Close()
	t.Logf("key free %v after the link came back", time.Since(back))
}

// A release lost in a total outage that lasts longer than the lease is
// retried until the restarted cluster answers: restarted servers free a key
// whose TTL ran out while they were down only some time later (a soak saw
// 1.7 s), and every replica's catch-up waits for it. On an in-process
// cluster the servers free it sooner (~0.3 s), so the test watches for the
// retry itself: the holder's "freed a write of ours" after the restart, or,
// when the servers were first, its "nothing of ours left to free".
func TestReleaseLostInAnOutageFreesOnceTheClusterAnswers(t *testing.T) {
	t.Parallel()
	c := natstest.RunCluster(t, 3)
	opts := lock.Options{LeaseDuration: 2 * time.Second, RenewInterval: 500 * time.Millisecond, Replicas: 3,
		AcquireRetryBaseDelay: 20 * time.Millisecond, AcquireRetryMaxDelay: 200 * time.Millisecond}
	other, _ := newLocker(t, c.URL(), opts)
	retried := make(chan struct{})
	var once sync.Once
	opts.Logger = zerolog.New(io.Discard).Level(zerolog.DebugLevel).Hook(zerolog.HookFunc(
		func(_ *zerolog.Event, _ zerolog.Level, msg string) {
			if msg == "lock: freed a write of ours once NATS answered" ||
				msg == "lock: nothing of ours left to free once NATS answered" {
				once.Do(func() { close(retried) })
			}
		}))
	holder, _ := newLocker(t, c.URL(), opts)
	lease := mustAcquire(t, holder, "k", lock.WithTimeout(10*time.Second))
	for i := range c.Size() {
		c.Stop(i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	err := lease.Release(ctx)
	cancel()
	if err == nil {
		t.Fatal("Release during a total outage succeeded; the test cannot tell the retry from it")
	}
	// The outage outlasts the lease (the old retry stopped at the lease's
	// end): nothing to await but time.
	time.Sleep(2 * opts.LeaseDuration)
	for i := range c.Size() {
		c.Start(i)
	}
	c.WaitMetaLeader()
	c.StreamLeader("KV_locks")
	back := time.Now()
	l2, err := other.Acquire(context.Background(), "k", lock.WithTimeout(20*time.Second))
	if err != nil {
		t.Fatalf("the key was still held 20 s after the cluster answered: %v", err)
	}
	defer l2.Close()
	t.Logf("key free %v after the cluster answered", time.Since(back))
	select {
	case <-retried:
	case <-time.After(5 * time.Second):
		t.Fatal("the holder did not retry its lost release once the cluster answered")
	}
}
