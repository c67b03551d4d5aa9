package scheduler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cronlock/cronlock/internal/history"
	"github.com/cronlock/cronlock/lock"
)

// The jobs' locks as operators see them: each job's lock is held in its
// state record (see hold.go), so these read the history bucket, not the
// lock bucket. ExpiresAt is the hold's last renewal on its holder's clock
// plus the lease: an estimate, since the replicas measure expiry each on
// its own clock from when they saw the record last change.

// Holder returns who holds the job's lock, or an error matching
// lock.ErrNotHeld when it is free.
func (h *History) Holder(ctx context.Context, name string) (lock.Holder, error) {
	st, _, err := h.read(ctx, name)
	if err != nil {
		return lock.Holder{}, err
	}
	if st.Holder == nil {
		return lock.Holder{}, fmt.Errorf("%w: %q", lock.ErrNotHeld, name)
	}
	return h.describe(name, st.Holder), nil
}

func (h *History) describe(name string, p *history.Hold) lock.Holder {
	since := p.Since
	if since.IsZero() {
		since = p.At
	}
	return lock.Holder{Key: name, Owner: p.Owner, Token: p.Token, AcquiredAt: since, ExpiresAt: p.At.Add(h.lease)}
}

// Locks lists the held locks of every job, sorted by key: one follow of
// the bucket's headers finds the held ones, and one read of each gives
// its holder.
func (h *History) Locks(ctx context.Context) ([]lock.Holder, error) {
	var mu sync.Mutex
	held := map[string]bool{}
	f, err := h.store.Bucket().Follow(ctx, func(key string, _ uint64, _ time.Time, hdr nats.Header) {
		if strings.Contains(key, "/") {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		held[key] = hdr.Get(history.HolderHeader) != ""
	})
	if err != nil {
		return nil, err
	}
	f.Stop()
	mu.Lock()
	var names []string
	for k, ok := range held {
		if ok {
			names = append(names, k)
		}
	}
	mu.Unlock()
	slices.Sort(names)
	out := make([]lock.Holder, 0, len(names))
	for _, name := range names {
		hd, err := h.Holder(ctx, name)
		switch {
		case err == nil:
			out = append(out, hd)
		case !errors.Is(err, lock.ErrNotHeld):
			return nil, err
		}
	}
	return out, nil
}

// ForceRelease frees the job's lock whoever holds it, in one
// compare-and-swap of its record, and returns the holder it removed; it
// fails with an error matching lock.ErrNotHeld when the lock is free. The
// holder's run stops within a watch delivery (at its next renewal at the
// latest), its context cancelled with lock.ErrLeaseLost.
func (h *History) ForceRelease(ctx context.Context, name string) (lock.Holder, error) {
	if err := ValidateRecord(name); err != nil {
		return lock.Holder{}, err
	}
	var removed *history.Hold
	_, _, err := h.update(ctx, name, nil, 0, func(st *history.Record) bool {
		removed, st.Holder = st.Holder, nil
		return removed != nil
	})
	switch {
	case err != nil:
		return lock.Holder{}, err
	case removed == nil:
		return lock.Holder{}, fmt.Errorf("%w: %q", lock.ErrNotHeld, name)
	}
	return h.describe(name, removed), nil
}

// Holder returns who holds the job's lock (see History.Holder).
func (s *Scheduler) Holder(ctx context.Context, name string) (lock.Holder, error) {
	return s.history.Holder(ctx, name)
}
