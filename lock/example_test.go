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
func exampleServer() (*server.Server, jetstream.JetStream, func()) {
	dir, _ := os.MkdirTemp("", "lock-example-")
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true})
	if err != nil {
		log.Fatal(err)
	}
	go s.Start()
	s.ReadyForConnections(5 * time.Second)
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		log.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	return s, js, func() { nc.Close(); s.Shutdown(); os.RemoveAll(dir) }
}

func Example() {
	_, js, stop := exampleServer()
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
	defer lease.Close()

	fmt.Println("migrating as", lease.Owner())
	// Output: migrating as worker-1
}

// A second caller is refused while the key is held; the error names the
// holder.
func ExampleLocker_Acquire_contention() {
	_, js, stop := exampleServer()
	defer stop()
	ctx := context.Background()
	a, _ := lock.New(ctx, js, lock.Options{OwnerID: "a"})
	b, _ := lock.New(ctx, js, lock.Options{OwnerID: "b"})
	defer a.Close()
	defer b.Close()

	held, _ := a.Acquire(ctx, "cache.warmup")
	defer held.Close()
	_, err := b.Acquire(ctx, "cache.warmup", lock.WithTimeout(100*time.Millisecond))
	fmt.Println(errors.Is(err, lock.ErrNotAcquired))
	// Output: true
}

// Several locks at once: all or nothing, in one canonical order, so two
// callers asking for overlapping sets cannot deadlock.
func ExampleLocker_AcquireAll() {
	_, js, stop := exampleServer()
	defer stop()
	ctx := context.Background()
	locker, _ := lock.New(ctx, js, lock.Options{})
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
	_, js, stop := exampleServer()
	defer stop()
	ctx := context.Background()
	locker, _ := lock.New(ctx, js, lock.Options{})
	defer locker.Close()

	lease, _ := locker.Acquire(ctx, "ledger.export")
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
