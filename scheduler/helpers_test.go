package scheduler_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/lock"
	"github.com/cronlock/cronlock/scheduler"
)

// skewedClock is the real clock read with an offset, as on a replica whose
// clock is wrong.
type skewedClock struct {
	clockwork.Clock
	offset time.Duration
}

func (c skewedClock) Now() time.Time                  { return time.Now().Add(c.offset) }
func (c skewedClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
func (c skewedClock) Until(t time.Time) time.Duration { return t.Sub(c.Now()) }

func skewed(d time.Duration) clockwork.Clock {
	return skewedClock{Clock: clockwork.NewRealClock(), offset: d}
}

// testLogger logs through t.Log, shown for failed tests (and with -v).
func testLogger(t *testing.T, name string) zerolog.Logger {
	return zerolog.New(zerolog.ConsoleWriter{Out: zerolog.TestWriter{T: t}, NoColor: true}).Level(zerolog.DebugLevel).With().Str("replica", name).Timestamp().Logger()
}

// replica is one scheduler on its own connection.
type replica struct {
	s      *scheduler.Scheduler
	locker *lock.Locker
	js     jetstream.JetStream
	cancel context.CancelFunc
	done   chan error
}

func lockOpts(owner string) lock.Options {
	return lock.Options{LeaseDuration: time.Second, RenewInterval: 300 * time.Millisecond,
		AcquireRetryBaseDelay: 10 * time.Millisecond, AcquireRetryMaxDelay: 100 * time.Millisecond, OwnerID: owner}
}

func newReplica(t *testing.T, url string, lo lock.Options, so scheduler.Options) *replica {
	t.Helper()
	_, js := natstest.Connect(t, url)
	l, err := lock.New(context.Background(), js, lo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if so.ShutdownGrace == 0 {
		so.ShutdownGrace = 2 * time.Second
	}
	s, err := scheduler.New(context.Background(), js, l, so)
	if err != nil {
		t.Fatal(err)
	}
	return &replica{s: s, locker: l, js: js}
}

func (r *replica) start(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done = cancel, make(chan error, 1)
	go func() { r.done <- r.s.Run(ctx) }()
	t.Cleanup(r.stop)
}

// stop shuts the replica down and waits for Run to return.
func (r *replica) stop() {
	if r.cancel == nil {
		return
	}
	r.cancel()
	<-r.done
	r.cancel = nil
}

// recorder collects runs from job functions.
type recorder struct {
	mu   sync.Mutex
	runs []rec
	ch   chan rec
}

type rec struct {
	replica    string
	tick       time.Time
	token      uint64
	attempt    int
	start, end time.Time
	cause      error
}

func newRecorder() *recorder { return &recorder{ch: make(chan rec, 1000)} }

func (r *recorder) add(x rec) {
	r.mu.Lock()
	r.runs = append(r.runs, x)
	r.mu.Unlock()
	select {
	case r.ch <- x:
	default:
	}
}

func (r *recorder) all() []rec {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]rec(nil), r.runs...)
}

// ran counts the recorded runs of tick.
func (r *recorder) ran(tick time.Time) int {
	n := 0
	for _, x := range r.all() {
		if x.tick.Equal(tick) {
			n++
		}
	}
	return n
}

// next waits for the next recorded run.
func (r *recorder) next(t *testing.T, d time.Duration) rec {
	t.Helper()
	select {
	case x := <-r.ch:
		return x
	case <-time.After(d):
		t.Fatalf("no run within %v", d)
		return rec{}
	}
}
