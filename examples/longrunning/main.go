// Command longrunning holds one lock for an operation that lasts longer than
// the lock's lease: the lease renews itself in the background, the work
// stops as soon as the lease is lost, and every write carries the lease's
// fencing token so that the resource can reject a holder that lost the lock
// without noticing in time (a GC pause, a slow network).
//
//	go run ./examples/longrunning -embedded
//
// To see a lease lost, let a simulated operator force-release the lock (in
// the belief that this replica is dead) and a second replica take over:
//
//	go run ./examples/longrunning -embedded -lease 2s -batch 300ms -takeover-after 1500ms
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

// key names the lock; every replica that may run the operation uses it.
const key = "long.running.operation"

func main() {
	// Ctrl-C cancels the context, so the deferred clean-up still runs: the
	// locks are released rather than left to expire.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "longrunning:", err)
		os.Exit(1)
	}
}

// run does the operation once, if this replica gets the lock within 5 s.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("longrunning", flag.ContinueOnError)
	fs.SetOutput(stdout)
	natsURL := fs.String("nats", nats.DefaultURL, "NATS server URL; several separated by commas")
	embedded := fs.Bool("embedded", false, "start an in-process nats-server with JetStream instead (no setup)")
	batches := fs.Int("batches", 10, "number of batches to process")
	batch := fs.Duration("batch", 3*time.Second, "time one batch takes")
	leaseDur := fs.Duration("lease", lock.DefaultLeaseDuration, "lock lease (whole seconds); renewed every half lease")
	takeoverAfter := fs.Duration("takeover-after", 0, "if set, simulate an operator force-releasing the lock after this long and replica-b taking over")
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
	nc, js, err := n.Connect("replica-a")
	if err != nil {
		return err
	}
	defer nc.Close()
	opts := lock.Options{OwnerID: "replica-a", LeaseDuration: *leaseDur, Logger: log}
	locker, err := lock.New(ctx, js, opts)
	if err != nil {
		return err
	}
	defer locker.Close()

	// A longer acquire timeout than a cron tick's 500 ms: this operation
	// is worth waiting for a holder that is about to finish.
	lease, err := locker.Acquire(ctx, key, lock.WithTimeout(5*time.Second))
	switch {
	case errors.Is(err, lock.ErrNotAcquired):
		// Contention, not a failure: the error names the holder.
		log.Warn().Err(err).Msg("another replica runs the operation")
		return nil
	case err != nil:
		return err // NATS unreachable or the like
	}
	// Release on every path. If the lease was lost, Close frees nothing:
	// it never deletes a key that another owner holds.
	defer lease.Close()
	log.Info().Str("key", key).Uint64("token", lease.Token()).Msg("lock acquired")

	store := &fencedStore{log: log}
	if *takeoverAfter > 0 {
		var wg sync.WaitGroup
		defer wg.Wait() // runs before lease.Close and the connection closes
		wg.Go(func() {
			if err := takeOver(ctx, n, *takeoverAfter, opts, store, log); err != nil {
				log.Error().Err(err).Msg("replica-b: takeover failed")
			}
		})
	}

	start := time.Now()
	if err := process(ctx, lease, store, *batches, *batch, log); err != nil {
		return err
	}
	log.Info().Float64("held_seconds", time.Since(start).Seconds()).Float64("lease_seconds", leaseDur.Seconds()).
		Msg("operation finished; the lease was renewed in the background for as long as it took")
	return nil
}

// process is the operation: it works in batches and commits each one.
func process(ctx context.Context, lease *lock.Lease, store *fencedStore, batches int, batch time.Duration, log zerolog.Logger) error {
	timer := time.NewTimer(batch)
	defer timer.Stop()
	for i := 1; i <= batches; i++ {
		// Work on the batch, but stop at once if the lease is lost:
		// another replica may already be running the operation.
		select {
		case <-lease.Done():
			log.Error().Err(lease.Err()).Int("batch", i).Msg("stopping: lease lost")
			return fmt.Errorf("batch %d: %w", i, lease.Err())
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			timer.Reset(batch)
		}
		// The lease may be lost between the check above and the write,
		// unnoticed; the token is what makes the write safe then.
		if err := store.Write("replica-a", lease.Token(), fmt.Sprintf("batch %d", i)); err != nil {
			log.Error().Err(err).Int("batch", i).Msg("stopping: fenced off")
			return fmt.Errorf("batch %d: %w", i, err)
		}
	}
	return nil
}

// takeOver simulates the mistake fencing protects against: after d, an
// operator force-releases the lock although replica-a is alive, and
// replica-b acquires it and writes before replica-a's next renewal tells it
// that its lease is gone.
func takeOver(ctx context.Context, n *exnats.NATS, d time.Duration, opts lock.Options, store *fencedStore, log zerolog.Logger) error {
	select {
	case <-time.After(d):
	case <-ctx.Done():
		return nil
	}
	nc, js, err := n.Connect("replica-b")
	if err != nil {
		return err
	}
	defer nc.Close()
	opts.OwnerID = "replica-b"
	locker, err := lock.New(ctx, js, opts)
	if err != nil {
		return err
	}
	defer locker.Close()

	// ForceRelease frees the revision it has just read; if replica-a renews
	// in between, it refuses ("the key changed"), so look again.
	for attempt := 1; ; attempt++ {
		err = locker.ForceRelease(ctx, key)
		if err == nil || attempt == 3 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	log.Warn().Msg("operator: force-released the lock")
	lease, err := locker.Acquire(ctx, key, lock.WithTimeout(5*time.Second))
	if err != nil {
		return err
	}
	defer lease.Close()
	return store.Write("replica-b", lease.Token(), "batch 1")
}

var errStaleToken = errors.New("stale fencing token")

// fencedStore stands for the resource the operation writes to. It keeps the
// highest token it has accepted and rejects writes carrying a lower one; a
// database does the same check in the transaction that writes, e.g.
// UPDATE ... SET ..., fence = $token WHERE id = $id AND fence <= $token.
type fencedStore struct {
	log     zerolog.Logger
	mu      sync.Mutex
	highest uint64
}

func (s *fencedStore) Write(who string, token uint64, data string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if token < s.highest {
		s.log.Warn().Str("by", who).Uint64("token", token).Uint64("highest", s.highest).Str("data", data).Msg("store: write rejected")
		return fmt.Errorf("%w: %d < %d", errStaleToken, token, s.highest)
	}
	s.highest = token
	s.log.Info().Str("by", who).Uint64("token", token).Str("data", data).Msg("store: committed")
	return nil
}
