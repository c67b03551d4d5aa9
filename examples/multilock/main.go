// Command multilock takes several locks at once with Locker.AcquireAll: all
// of them or none, in one canonical (sorted) order whatever order the caller
// lists them in, so two replicas wanting overlapping sets cannot deadlock.
// It also shows the two ways an acquisition fails: the resources are busy
// (errors.Is(err, lock.ErrNotAcquired): try later), or NATS cannot be
// reached (any other error: alert, the lock service is down).
//
//	go run ./examples/multilock -embedded
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/examples/internal/exnats"
	"github.com/cronlock/cronlock/lock"
)

func main() {
	// Ctrl-C cancels the context, so the deferred clean-up still runs: the
	// locks are released rather than left to expire.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "multilock:", err)
		os.Exit(1)
	}
}

// replica is one process's view: its own connection and Locker.
type replica struct {
	name   string
	nc     *nats.Conn
	locker *lock.Locker
	log    zerolog.Logger
}

// run plays three scenes with two replicas and returns an error if one of
// them does not turn out as the comments say.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("multilock", flag.ContinueOnError)
	fs.SetOutput(stdout)
	natsURL := fs.String("nats", nats.DefaultURL, "NATS server URL; several separated by commas")
	embedded := fs.Bool("embedded", false, "start an in-process nats-server with JetStream instead (no setup)")
	hold := fs.Duration("hold", 300*time.Millisecond, "how long each replica works while holding both locks")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	log := zerolog.New(zerolog.ConsoleWriter{Out: stdout, TimeFormat: time.TimeOnly, NoColor: true}).
		With().Timestamp().Logger()

	n, err := exnats.Start(*natsURL, *embedded)
	if err != nil {
		return err
	}
	defer n.Close()
	var replicas [2]*replica
	for i, name := range []string{"replica-a", "replica-b"} {
		nc, js, err := n.Connect(name)
		if err != nil {
			return err
		}
		defer nc.Close()
		locker, err := lock.New(ctx, js, lock.Options{OwnerID: name})
		if err != nil {
			return err
		}
		defer locker.Close()
		replicas[i] = &replica{name: name, nc: nc, locker: locker, log: log.With().Str("replica", name).Logger()}
	}
	a, b := replicas[0], replicas[1]

	// 1. The same two resources, listed in opposite orders. Taking them one
	// by one in the listed order could deadlock (a holds resource-a and
	// waits for resource-b, b the reverse); AcquireAll takes them in sorted
	// order, so one replica gets both and the other waits for it.
	log.Info().Msg("scene 1: overlapping sets in opposite orders")
	var wg sync.WaitGroup
	var errA, errB error
	wg.Go(func() { errA = a.transfer(ctx, []string{"resource-a", "resource-b"}, 5*time.Second, *hold) })
	wg.Go(func() { errB = b.transfer(ctx, []string{"resource-b", "resource-a"}, 5*time.Second, *hold) })
	wg.Wait()
	if err := errors.Join(errA, errB); err != nil {
		return fmt.Errorf("scene 1: %w", err)
	}

	// 2. All or nothing: a holds resource-b, so b, asking for both, gets
	// neither: AcquireAll released resource-a, which it had taken first.
	log.Info().Msg("scene 2: one of the resources is busy")
	held, err := a.locker.Acquire(ctx, "resource-b")
	if err != nil {
		return err
	}
	err = b.transfer(ctx, []string{"resource-a", "resource-b"}, 300*time.Millisecond, *hold)
	held.Close()
	if !errors.Is(err, lock.ErrNotAcquired) {
		return fmt.Errorf("scene 2: want busy, got %v", err)
	}
	if _, err := b.locker.Holder(ctx, "resource-a"); !errors.Is(err, lock.ErrNotHeld) {
		return fmt.Errorf("scene 2: resource-a should be free, got %v", err)
	}
	b.log.Info().Msg("kept nothing: resource-a is free")

	// 3. NATS unreachable (here: b's connection closed). The error does not
	// match ErrNotAcquired: retrying soon or skipping as for a busy lock
	// would hide an outage.
	log.Info().Msg("scene 3: NATS unreachable")
	b.nc.Close()
	err = b.transfer(ctx, []string{"resource-a", "resource-b"}, 300*time.Millisecond, *hold)
	if err == nil || errors.Is(err, lock.ErrNotAcquired) {
		return fmt.Errorf("scene 3: want a NATS failure, got %v", err)
	}
	log.Info().Msg("done")
	return nil
}

// transfer does work that needs both resources: it takes their locks within
// timeout, works for d unless a lease is lost, and releases them.
func (r *replica) transfer(ctx context.Context, keys []string, timeout, d time.Duration) error {
	leases, err := r.locker.AcquireAll(ctx, keys, lock.WithTimeout(timeout))
	switch {
	case errors.Is(err, lock.ErrNotAcquired):
		// Contention: another replica holds one of the keys (the error
		// names it). Normal; skip or try again later.
		r.log.Warn().Err(err).Msg("busy")
		return err
	case err != nil:
		// NATS failed: the state of the locks is unknown. Report it.
		r.log.Error().Err(err).Msg("lock service unavailable")
		return err
	}
	// Close after stop (deferred later, so run first): the watchers exit,
	// then the leases are released.
	defer func() {
		r.log.Info().Msg("releasing both")
		for _, l := range leases {
			l.Close()
		}
	}()
	ctx, stop := whileHeld(ctx, leases)
	defer stop()

	ev := r.log.Info()
	for _, l := range leases {
		ev = ev.Uint64(l.Key(), l.Token()) // each lock's fencing token
	}
	ev.Msg("holding both")
	select {
	case <-time.After(d): // the work, done under both locks
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// whileHeld returns a context cancelled, with a cause matching
// lock.ErrLeaseLost, as soon as one of the leases is lost: work that needs
// all the resources must stop when it loses any of them. stop ends the
// watching goroutines.
func whileHeld(ctx context.Context, leases []*lock.Lease) (_ context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	var wg sync.WaitGroup
	for _, l := range leases {
		wg.Go(func() {
			select {
			case <-l.Done():
				if err := l.Err(); err != nil {
					cancel(fmt.Errorf("%s: %w", l.Key(), err))
				}
			case <-ctx.Done():
			}
		})
	}
	return ctx, func() { cancel(nil); wg.Wait() }
}
