// Package lock is a lease lock on a NATS JetStream Key-Value bucket: at most
// one holder per key at a time, across processes and hosts.
//
// A Locker acquires a Lease on a key. While held, the lease renews itself in
// the background; Release (or Close, for defer) frees the key. If the holder
// crashes, the server expires the key after LeaseDuration and a waiter takes
// it within milliseconds.
//
//	locker, err := lock.New(ctx, js, lock.Options{})
//	lease, err := locker.Acquire(ctx, "reports.daily")
//	switch {
//	case errors.Is(err, lock.ErrNotAcquired):
//		return nil // another instance holds it
//	case err != nil:
//		return err // NATS is unreachable: not the same thing
//	}
//	defer lease.Close()
//	select {
//	case <-lease.Done(): // lost: stop working on the protected resource
//	...
//	}
//
// # How it works
//
// Each key is one subject of the bucket's stream, with history 1. A lease is
// a write with an expected-last-subject-sequence condition (compare-and-swap)
// and a per-message TTL of LeaseDuration, so expiry is decided by the server's
// clock, never by clients' clocks. The revision of the acquiring write is the
// lease's fencing token. Renewal is the same conditional write against the
// lease's revision; a conflict means someone else holds the key and the lease
// is lost at once. Release is a conditional purge marker, so it never frees a
// key another owner holds. Every Locker watches the bucket: an acquire writes
// against the revision it last heard of (one round trip, also right after a
// release), and a waiter wakes as soon as the key is released or expires.
// The watch pulls what was written every 100 ms while the Locker holds a
// lease (every 5 s while it holds none), and at once only while an Acquire
// waits for a held key, so an uncontended cycle costs about its two writes;
// a lease taken from its holder (ForceRelease) ends within ~100 ms.
//
// # Guarantees and limits
//
// The holder measures its lease on its own monotonic clock from the moment
// before the write that acquired or last renewed it, minus a tenth of the
// lease as margin; past that local deadline without a confirmed renewal, the
// lease is lost and Done is closed even if the network is silent. So a holder
// cut off from NATS stops before the server lets anyone else in. What no lock
// can prevent is a holder that is paused (GC, SIGSTOP, a VM migration) after
// checking its lease and before touching the resource: protect such side
// effects with Token, letting the resource reject a token lower than the
// highest it has seen.
//
// The bucket needs nats-server 2.11 or newer (per-message TTLs). For
// production use an R3 bucket on a 3-node JetStream cluster (Options.Replicas).
package lock
