package lock

import (
	"context"
	"time"
)

// freeRetry is how often freeLater tries while NATS does not answer.
const freeRetry = 250 * time.Millisecond

// freeLater keeps trying, in the background, to free key while it holds a
// write of lease id: after a release or an abandoned acquire that NATS did
// not answer (no stream leader, no quorum, a lost connection). Without it the
// key stays held until the server's TTL, which after a leader election can
// take several times the lease, and every replica's catch-up waits. It gives
// up once the lease would have expired anyway, and when the Locker closes.
func (l *Locker) freeLater(key, id string) {
	l.reapers.Add(1)
	go func() {
		defer l.reapers.Done()
		giveUp := time.NewTimer(l.opts.LeaseDuration)
		defer giveUp.Stop()
		tick := time.NewTicker(freeRetry)
		defer tick.Stop()
		for {
			select {
			case <-l.closing:
				return
			case <-giveUp.C:
				return
			case <-tick.C:
				if l.freeOwn(key, id) == nil {
					return
				}
			}
		}
	}()
}

// freeOwn frees key if it holds a write of lease id. It returns nil when
// it freed it or there is nothing of ours to free, and an error when NATS
// did not answer or the key changed under it (look again).
func (l *Locker) freeOwn(key, id string) error {
	ctx, cancel := context.WithTimeout(context.Background(), l.opts.AcquireRetryMaxDelay)
	defer cancel()
	e, err := l.last(ctx, key)
	if err != nil {
		return err
	}
	if e == nil || e.free || e.recErr != nil || e.rec.Lease != id {
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
