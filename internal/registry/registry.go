package registry

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cronlock/cronlock/internal/follow"
	"github.com/cronlock/cronlock/internal/kv"
)

// leaveTimeout bounds removing this replica's announcement at shutdown;
// without it the announcement ends at TTL.
const leaveTimeout = 2 * time.Second

// Registry announces this replica and follows the others; the
// announcements also sample the server's clock (OffsetEstimate, and clock
// for the replicas' liveness).
type Registry struct {
	bucket *kv.Bucket
	self   Replica
	key    string
	offset *OffsetEstimate
	now    func() time.Time // the replica's own clock
	clock  ServerClock      // from this replica's own announcements

	// othersMu guards others alone: the scheduling path reads it at every
	// tick (Live), so it is never held across a NATS call.
	othersMu sync.Mutex
	others   map[string]announced // key → last announcement, self included

	// mu guards pending; Announce holds it across its write, so the
	// watch's sample of that write waits until the revision is known.
	mu      sync.Mutex
	pending struct {
		rev    uint64
		t0, t1 time.Time
	}
	sampled chan struct{} // closed at the first clock sample
	// joined has a value when a replica was heard for the first time, or
	// leaving (Joined).
	joined chan struct{}
	f      *follow.Follower
}

// Joined has a value after the watch heard a replica it did not know, or
// a replica's announcement removed (it left): a reader of Live that acts
// on changes of the live set waits on it instead of polling. It has one
// reader (the scheduler's follow set): a second would take the first's
// signals. A replica whose announcement lapses is not signalled: Live
// drops it when asked.
func (r *Registry) Joined() <-chan struct{} { return r.joined }

// New returns the registry of replica self in bucket (see Open). Its
// announcements feed offset, which may be nil (no estimate: a scheduler on
// its own clock); now is the replica's own clock, whose send and
// acknowledgement times make the samples.
func New(b *kv.Bucket, self Replica, offset *OffsetEstimate, now func() time.Time) *Registry {
	return &Registry{bucket: b, self: self, key: keyFor(self.ID), offset: offset, now: now,
		others: map[string]announced{}, sampled: make(chan struct{}), joined: make(chan struct{}, 1)}
}

// announced is a replica's last announcement as the watch heard it.
type announced struct {
	id     string
	seen   time.Time // stored, server clock
	format int
	labels map[string]string
}

// ID is this replica's id.
func (r *Registry) ID() string { return r.self.ID }

// Sampled is closed once the watch has heard back the first of this
// replica's announcements: the first reading of the server's clock.
func (r *Registry) Sampled() <-chan struct{} { return r.sampled }

// Live returns the ids of the live replicas (see Live), self included
// while its own announcements are fresh. Announcements too old to be live
// are forgotten: a later one brings the replica back.
func (r *Registry) Live() []string {
	now := r.clock.Now()
	r.othersMu.Lock()
	defer r.othersMu.Unlock()
	out := make([]string, 0, len(r.others))
	for key, a := range r.others {
		if !Live(a.seen, now) {
			delete(r.others, key)
			continue
		}
		out = append(out, a.id)
	}
	slices.Sort(out)
	return out
}

// Older returns the ids of the live replicas that announce an older
// stored format than this replica's (see Replica.Format), sorted.
func (r *Registry) Older() []string {
	now := r.clock.Now()
	r.othersMu.Lock()
	defer r.othersMu.Unlock()
	var out []string
	for _, a := range r.others {
		if a.format < r.self.Format && Live(a.seen, now) {
			out = append(out, a.id)
		}
	}
	slices.Sort(out)
	return out
}

// Lookup reads replica id's announcement from the bucket and reports
// whether it is of a live replica (see Live): false when there is none,
// it was removed, is too old or does not parse. An error means it cannot
// tell.
func (r *Registry) Lookup(ctx context.Context, id string) (Replica, bool, error) {
	e, err := r.bucket.Last(ctx, keyFor(id))
	if err != nil {
		return Replica{}, false, err
	}
	rep, ok := decode(e, r.clock.Now())
	return rep, ok, nil
}

// Watch follows the announcements.
func (r *Registry) Watch(ctx context.Context) error {
	f, err := r.bucket.Follow(ctx, r.heard)
	if err != nil {
		return err
	}
	r.f = f
	return nil
}

func (r *Registry) heard(key string, rev uint64, stored time.Time, h nats.Header) {
	r.othersMu.Lock()
	free := kv.IsFree(h)
	_, known := r.others[key]
	if free {
		delete(r.others, key)
	} else if id := h.Get(idHeader); id != "" {
		format, _ := strconv.Atoi(h.Get(formatHeader))
		r.others[key] = announced{id: id, seen: stored, format: format, labels: splitLabels(h.Get(labelsHeader))}
	}
	r.othersMu.Unlock()
	if known == free {
		select {
		case r.joined <- struct{}{}:
		default:
		}
	}
	if free {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if key == r.key && rev == r.pending.rev && !r.pending.t0.IsZero() {
		// This replica's own write, stamped just now: a fresh reading of
		// the server's clock (an older message redelivered is not).
		r.clock.Set(stored, time.Now())
		if r.offset != nil {
			mid := r.pending.t0.Add(r.pending.t1.Sub(r.pending.t0) / 2)
			r.offset.Add(stored.Sub(mid), r.pending.t1.Sub(r.pending.t0))
		}
		r.pending.t0 = time.Time{}
		select {
		case <-r.sampled:
		default:
			close(r.sampled)
		}
	}
}

// Announce writes this replica's announcement with the jobs it runs now.
func (r *Registry) Announce(ctx context.Context, running []string) error {
	self := r.self
	self.Running = running
	if self.Running == nil {
		self.Running = []string{}
	}
	if d, ok := r.offset.Get(); ok {
		sec := d.Seconds()
		self.ClockOffsetSeconds = &sec
	}
	data, err := json.Marshal(self)
	if err != nil {
		return err
	}
	t0 := r.now()
	r.mu.Lock() // hold off the watch's sample until the revision is known
	defer r.mu.Unlock()
	hdr := r.header()
	rev, err := r.bucket.Put(ctx, kv.Write{Key: r.key, Value: data, TTL: TTL, Expected: r.pending.rev, Header: hdr})
	if kv.IsConflict(err) { // an earlier process with this id, or a lost reply: write over it
		var e *kv.Entry
		if e, err = r.bucket.Last(ctx, r.key); err == nil {
			var last uint64
			if e != nil {
				last = e.Revision
			}
			rev, err = r.bucket.Put(ctx, kv.Write{Key: r.key, Value: data, TTL: TTL, Expected: last, Header: hdr})
		}
	}
	if err != nil {
		return err
	}
	r.pending.rev, r.pending.t0, r.pending.t1 = rev, t0, r.now()
	return nil
}

// header is the announcement's headers: the id, and the format and the
// labels if any.
func (r *Registry) header() nats.Header {
	h := nats.Header{idHeader: []string{r.self.ID}}
	if r.self.Format > 0 {
		h.Set(formatHeader, strconv.Itoa(r.self.Format))
	}
	if l := joinLabels(r.self.Labels); l != "" {
		h.Set(labelsHeader, l)
	}
	return h
}

// Leave removes the announcement and stops the watch.
func (r *Registry) Leave() {
	if r.f != nil {
		r.f.Stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), leaveTimeout)
	defer cancel()
	r.bucket.Purge(ctx, r.key, 0, markerTTL)
}
