package lock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cronlock/cronlock/lock"
)

// exampleServer starts an embedded JetStream server for the examples; real
// code connects to its NATS servers instead.
func exampleServer() (jetstream.JetStream, func()) {
	dir, err := os.MkdirTemp("", "lock-example-")
	if err != nil {
		log.Fatal(err)
	}
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true})
	if err != nil {
		log.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		log.Fatal("nats-server not ready within 10s")
	}
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		log.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		log.Fatal(err)
	}
	return js, func() { nc.Close(); s.Shutdown(); os.RemoveAll(dir) }
}

func Example() {
	js, stop := exampleServer()
	defer stop()
	ctx := context.Background()

	locker, err := lock.New(ctx, js, lock.Options{OwnerID: "worker-1"})
	if err != nil {
		log.Fatal(err)
	}
	defer locker.Close()

	lease, err := locker.Acquire(ctx, "database.migration.v1", lock.WithTimeout(5*time.Second))
	switch {
	case errors.Is(err, lock.ErrNotAcquired):
		fmt.Println("another instance is migrating")
		return
	case err != nil:
		log.Fatal(err) // NATS is unreachable
	}
	defer func() {
		// A failed release is harmless: the server frees the key when the
		// lease expires.
		if err := lease.Release(ctx); err != nil {
			log.Print(err)
		}
	}()

	fmt.Println("migrating as", lease.Owner())
	// Output: migrating as worker-1
}

// A second caller is refused while the key is held; the error names the
// holder.
func ExampleLocker_Acquire_contention() {
	js, stop := exampleServer()
	defer stop()
	ctx := context.Background()
	a, err := lock.New(ctx, js, lock.Options{OwnerID: "a"})
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close()
	b, err := lock.New(ctx, js, lock.Options{OwnerID: "b"})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()

	held, err := a.Acquire(ctx, "cache.warmup")
	if err != nil {
		log.Fatal(err)
	}
	defer held.Close()
	_, err = b.Acquire(ctx, "cache.warmup", lock.WithTimeout(100*time.Millisecond))
	fmt.Println(errors.Is(err, lock.ErrNotAcquired))
	// Output: true
}

// Several locks at once: all or nothing, in one canonical order, so two
// callers asking for overlapping sets cannot deadlock.
func ExampleLocker_AcquireAll() {
	js, stop := exampleServer()
	defer stop()
	ctx := context.Background()
	locker, err := lock.New(ctx, js, lock.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer locker.Close()

	leases, err := locker.AcquireAll(ctx, []string{"resource-b", "resource-a"})
	if err != nil {
		log.Fatal(err)
	}
	for _, l := range leases {
		defer l.Close()
	}
	fmt.Println(leases[0].Key(), leases[1].Key())
	// Output: resource-b resource-a
}

// A long operation watches Done and checks the fencing token at the
// resource, so a holder paused past its lease cannot do harm.
func ExampleLease_Token() {
	js, stop := exampleServer()
	defer stop()
	ctx := context.Background()
	locker, err := lock.New(ctx, js, lock.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer locker.Close()

	lease, err := locker.Acquire(ctx, "ledger.export")
	if err != nil {
		log.Fatal(err) // ErrNotAcquired after the default timeout, or a NATS error
	}
	defer lease.Close()

	var highestSeen uint64 // kept by the protected resource
	write := func(token uint64) error {
		if token < highestSeen {
			return errors.New("stale token")
		}
		highestSeen = token
		return nil
	}
	select {
	case <-lease.Done():
		fmt.Println("lease lost:", lease.Err())
	default:
		fmt.Println(write(lease.Token()))
	}
	// Output: <nil>
}
