package lock

import (
	"context"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
)

const (
	// freeRetry is how often freeLater tries while NATS does not answer.
	freeRetry = 250 * time.Millisecond
	// freeSettle is how long freeLater goes on looking after NATS first
	// answers that no write of ours holds the key, when the connection was
	// down meanwhile. A write that the client buffered while disconnected
	// is sent on reconnect and may be stored just after a read that found
	// the key free; stopping at that read left the key held until its TTL
	// (a lease) and delayed the catch-up. Without a disconnect it stops at
	// the first such answer: under load (acquires timing out by the
	// thousand) more reads would only add to it.
	freeSettle = 2 * time.Second
)

// freeLater keeps trying, in the background, to free key while it holds a
// write of lease id: after a release or an abandoned acquire that NATS did
// not answer (no stream leader, no quorum, a lost connection). Without it the
// key stays held until the server's TTL, which after a leader election can
// take several times the lease, and every replica's catch-up waits.
//
// It tries until NATS answers that nothing of ours is left (freeing what it
// finds meanwhile); when the connection was down meanwhile, until it has
// answered so for freeSettle. It does not stop at the lease's end: servers restarted after a total outage free a
// key whose TTL ran out while they were down only some time after they
// answer again (a 30-minute soak saw a key held 1.7 s after the cluster
// answered, 11 s after its last renewal, because this had given up while
// the cluster was down). A Locker's Close ends it.
func (l *Locker) freeLater(key, id string) {
	l.freeMu.Lock()
	ids, running := l.frees[key]
	l.frees[key] = append(ids, id)
	l.freeMu.Unlock()
	if running {
		return // one goroutine per key, however many ticks an outage lasts
	}
	l.reapers.Add(1)
	go func() {
		defer l.reapers.Done()
		tick := time.NewTicker(freeRetry)
		defer tick.Stop()
		resent := l.resendWatch()
		var clean time.Time // since when NATS answers that no write of ours holds the key
		for {
			select {
			case <-l.closing:
				return
			case <-tick.C:
			}
			n, ok := l.freePending(key)
			switch {
			case !ok:
				clean = time.Time{}
			case !resent() && l.endFrees(key, n):
				return
			case clean.IsZero():
				clean = time.Now()
			case time.Since(clean) >= freeSettle && l.endFrees(key, n):
				return
			}
		}
	}()
}

// freePending tries to free the key if it holds one of the writes
// freeLater keeps for it. It reports whether NATS answered that none holds
// it now (freed by this call or not there), and how many ids it looked
// for. One read answers for all of them: an outage leaves one abandoned
// acquire per tick and catch-up retry, and a release among them must not
// wait behind hundreds of reads.
func (l *Locker) freePending(key string) (int, bool) {
	l.freeMu.Lock()
	ids := slices.Clone(l.frees[key])
	l.freeMu.Unlock()
	freed, err := l.freeOwnReport(key, ids...)
	if err == nil && !freed {
		// The servers may have freed it first (a TTL that ran out while
		// they were down); said so that the retry can be seen either way.
		l.log.Debug().Str("key", key).Msg("lock: nothing of ours left to free once NATS answered")
	}
	return len(ids), err == nil && !freed
}

// resendWatch returns a test of whether writes made before the call may
// still be sent from the client's reconnect buffer: the connection was not
// up at the call, or has reconnected since.
func (l *Locker) resendWatch() func() bool {
	if l.nc == nil {
		return func() bool { return true }
	}
	down, reconnects := l.nc.Status() != nats.CONNECTED, l.nc.Stats().Reconnects
	return func() bool { return down || l.nc.Stats().Reconnects != reconnects }
}

// endFrees ends freeLater's work on key, unless ids were added after the
// first n (then it goes on, for them).
func (l *Locker) endFrees(key string, n int) bool {
	l.freeMu.Lock()
	defer l.freeMu.Unlock()
	if len(l.frees[key]) > n {
		return false
	}
	delete(l.frees, key)
	return true
}

// freeOwn frees key if it holds a write of one of the lease ids. It
// returns nil when it freed it or there is nothing of ours to free, and an
// error when NATS did not answer or the key changed under it (look again).
func (l *Locker) freeOwn(key string, ids ...string) error {
	_, err := l.freeOwnReport(key, ids...)
	return err
}

// freeOwnReport is freeOwn, also reporting whether it found a write of
// ours and freed it.
func (l *Locker) freeOwnReport(key string, ids ...string) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), l.opts.AcquireRetryMaxDelay)
	defer cancel()
	e, err := l.last(ctx, key)
	if err != nil {
		return false, err
	}
	if e == nil || e.free || e.recErr != nil || !slices.Contains(ids, e.rec.Lease) {
		return false, nil
	}
	// A conflict means the read was stale or the key changed meanwhile:
	// the caller looks again.
	if err := l.free(ctx, key, e.rev); err != nil {
		return false, err
	}
	l.log.Debug().Str("key", key).Msg("lock: freed a write of ours once NATS answered")
	return true, nil
}
