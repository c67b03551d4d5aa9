package lock

import (
	"context"
	"slices"
	"time"
)

// freeRetry is how often freeLater tries while NATS does not answer.
const freeRetry = 250 * time.Millisecond

// freeLater keeps trying, in the background, to free key while it holds a
// write of lease id: after a release or an abandoned acquire that NATS did
// not answer (no stream leader, no quorum, a lost connection). Without it the
// key stays held until the server's TTL, which after a leader election can
// take several times the lease, and every replica's catch-up waits.
//
// It tries until NATS answers: freed, or nothing of ours left. It does not
// stop at the lease's end: servers restarted after a total outage free a
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
		for {
			select {
			case <-l.closing:
				return
			case <-tick.C:
				if l.freePending(key) {
					return
				}
			}
		}
	}()
}

// freePending tries to free the key if it holds one of the writes
// freeLater keeps for it, and reports whether none is left (then the key's
// goroutine ends). One read answers for all of them: an outage leaves one
// abandoned acquire per tick and catch-up retry, and a release among them
// must not wait behind hundreds of reads.
func (l *Locker) freePending(key string) bool {
	l.freeMu.Lock()
	ids := slices.Clone(l.frees[key])
	l.freeMu.Unlock()
	if l.freeOwn(key, ids...) != nil {
		return false
	}
	l.freeMu.Lock()
	defer l.freeMu.Unlock()
	left := l.frees[key][len(ids):] // added meanwhile
	if len(left) == 0 {
		delete(l.frees, key)
		return true
	}
	l.frees[key] = slices.Clone(left)
	return false
}

// freeOwn frees key if it holds a write of one of the lease ids. It
// returns nil when it freed it or there is nothing of ours to free, and an
// error when NATS did not answer or the key changed under it (look again).
func (l *Locker) freeOwn(key string, ids ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), l.opts.AcquireRetryMaxDelay)
	defer cancel()
	e, err := l.last(ctx, key)
	if err != nil {
		return err
	}
	if e == nil || e.free || e.recErr != nil || !slices.Contains(ids, e.rec.Lease) {
		return nil
	}
	// A conflict means the read was stale or the key changed meanwhile:
	// the caller looks again.
	err = l.free(ctx, key, e.rev)
	if err == nil {
		l.log.Debug().Str("key", key).Msg("lock: freed a write of ours once NATS answered")
	}
	return err
}
