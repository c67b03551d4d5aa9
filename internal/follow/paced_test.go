package follow_test

import (
	"context"
	"github.com/nats-io/nats.go/jetstream"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cronlock/cronlock/internal/follow"
)

// seen records the last sequence delivered per subject, and when.
type seen struct {
	mu  sync.Mutex
	seq map[string]uint64
	at  map[string]time.Time
}

func (s *seen) handle(subject string, seq uint64, _ time.Time, _ nats.Header) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq[subject], s.at[subject] = seq, time.Now()
}

// wait polls until subject was delivered at seq, and returns when.
func (s *seen) wait(t *testing.T, subject string, seq uint64) time.Time {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		got, at := s.seq[subject], s.at[subject]
		s.mu.Unlock()
		if got >= seq {
			return at
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("%s@%d not delivered within 5 s", subject, seq)
	return time.Time{}
}

// A paced follow delivers what the stream held at the start before it
// returns, then new writes within its interval, at once while hurried,
// and every write made while its consumer was gone once it has a new one.
func TestPaced(t *testing.T) {
	t.Parallel()
	nc, kv, stream := newBucket(t, "p")
	ctx := context.Background()
	put := func(k string) uint64 {
		rev, err := kv.PutString(ctx, k, "v")
		if err != nil {
			t.Fatal(err)
		}
		return rev
	}
	put("x")
	y := put("y")
	s := &seen{seq: map[string]uint64{}, at: map[string]time.Time{}}
	const interval = 300 * time.Millisecond
	p, err := follow.StartPaced(ctx, stream, nc, "$KV.p.>", follow.Pace{Interval: interval, Linger: 200 * time.Millisecond}, s.handle)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	s.mu.Lock()
	if s.seq["$KV.p.y"] != y || len(s.seq) != 2 {
		t.Errorf("after StartPaced: %v, want x and y@%d", s.seq, y)
	}
	s.mu.Unlock()

	// Not hurried: delivered within the interval, not necessarily at once.
	written := time.Now()
	s.wait(t, "$KV.p.z", put("z"))
	if d := time.Since(written); d > interval+time.Second {
		t.Errorf("unhurried write delivered after %v, want within about %v", d, interval)
	}

	// Hurried: at once (well within the interval).
	done := p.Hurry()
	awaitPull(t, stream)
	written = time.Now()
	at := s.wait(t, "$KV.p.h", put("h"))
	done()
	if d := at.Sub(written); d > interval/2 {
		t.Errorf("hurried write delivered after %v, want at once", d)
	}

	// The consumer is deleted behind the follow's back; writes made
	// meanwhile are delivered by its next one.
	names := stream.ConsumerNames(ctx)
	for name := range names.Name() {
		if err := stream.DeleteConsumer(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	a := put("a")
	s.wait(t, "$KV.p.b", put("b"))
	s.wait(t, "$KV.p.a", a)
}

// awaitPull waits until a pull request of the stream's consumer waits on
// the server, so that what is written next is delivered at once.
func awaitPull(t *testing.T, stream jetstream.Stream) {
	t.Helper()
	ctx := context.Background()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		names := stream.ConsumerNames(ctx)
		for name := range names.Name() {
			c, err := stream.Consumer(ctx, name)
			if err != nil {
				continue
			}
			if info, err := c.Info(ctx); err == nil && info.NumWaiting > 0 {
				return
			}
		}
	}
	t.Fatal("no pull request reached the server within 5 s")
}

// While Idle reports true the follow pulls every IdleInterval: a write is
// not delivered within Interval. Once Idle turns false and Wake is called,
// it is delivered within Interval.
func TestPacedIdle(t *testing.T) {
	t.Parallel()
	nc, kv, stream := newBucket(t, "pi")
	ctx := context.Background()
	s := &seen{seq: map[string]uint64{}, at: map[string]time.Time{}}
	var mu sync.Mutex
	idle := true
	isIdle := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return idle
	}
	const interval = 100 * time.Millisecond
	pace := follow.Pace{Interval: interval, Linger: 200 * time.Millisecond, IdleInterval: time.Minute, Idle: isIdle}
	p, err := follow.StartPaced(ctx, stream, nc, "$KV.pi.>", pace, s.handle)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	rev, err := kv.PutString(ctx, "a", "v")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * interval) // an absence: nothing to await
	s.mu.Lock()
	early := s.seq["$KV.pi.a"]
	s.mu.Unlock()
	if early != 0 {
		t.Fatalf("delivered @%d while idle within %v, want it held until the idle pace", early, 5*interval)
	}
	mu.Lock()
	idle = false
	mu.Unlock()
	woken := time.Now()
	p.Wake()
	s.wait(t, "$KV.pi.a", rev)
	if d := time.Since(woken); d > interval+time.Second {
		t.Errorf("delivered %v after Wake, want within about %v", d, interval)
	}
}
