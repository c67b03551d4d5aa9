package kv

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go"
)

// ErrReconnected ends a call bound by Reconnects.Bound: the client
// reconnected while the call was in flight.
var ErrReconnected = errors.New("the NATS client reconnected while the call was in flight")

// Reconnects ends calls in flight when the client reconnects. A request
// sent before its connection dropped (its server killed, the link cut)
// has lost its reply, or never reached a server; without this it waits
// for its own timeout, seconds, while whatever depends on it (a job's
// lock, held until its result is written) waits too. A call bound with
// Bound ends with ErrReconnected at the reconnect instead, to be retried
// at once on the new connection.
//
// Bind only calls that are safe to send twice: the first may still have
// been applied (a compare-and-swap is; its retry reads what the first
// wrote). A request buffered while disconnected and sent on the reconnect
// is ended too, and its retry may then be the second write of the two.
type Reconnects struct {
	nc *nats.Conn

	mu    sync.Mutex
	epoch context.Context // ends at the next reconnect
	end   context.CancelCauseFunc
	ch    chan nats.Status // nil until Start
	done  chan struct{}
}

// NewReconnects returns a Reconnects of nc that ends nothing until Start.
func NewReconnects(nc *nats.Conn) *Reconnects {
	r := &Reconnects{nc: nc, done: make(chan struct{})}
	r.epoch, r.end = context.WithCancelCause(context.Background())
	return r
}

// Start follows nc's reconnects until Stop.
func (r *Reconnects) Start() {
	if r == nil || r.nc == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ch != nil {
		return
	}
	r.ch = r.nc.StatusChanged(nats.CONNECTED)
	go r.follow(r.ch)
}

func (r *Reconnects) follow(ch chan nats.Status) {
	defer close(r.done)
	for range ch { // closed by Stop (RemoveStatusListener)
		r.mu.Lock()
		r.end(ErrReconnected)
		r.epoch, r.end = context.WithCancelCause(context.Background())
		r.mu.Unlock()
	}
}

// Stop ends Start's goroutine; calls bound after it are ended only by
// their own context.
func (r *Reconnects) Stop() {
	if r == nil {
		return
	}
	r.mu.Lock()
	ch := r.ch
	r.mu.Unlock()
	if ch == nil {
		return
	}
	r.nc.RemoveStatusListener(ch)
	<-r.done
}

// Cut returns err, marked with ErrReconnected when ctx (from Bound) ended
// because the client reconnected: the call's reply may have been lost,
// and the caller may send it again at once.
func Cut(ctx context.Context, err error) error {
	if err != nil && errors.Is(context.Cause(ctx), ErrReconnected) && !errors.Is(err, ErrReconnected) {
		return fmt.Errorf("%w: %w", ErrReconnected, err)
	}
	return err
}

// Bound returns a context that ends with ctx, or with cause ErrReconnected
// when the client reconnects before cancel is called. A nil Reconnects
// binds nothing.
func (r *Reconnects) Bound(ctx context.Context) (context.Context, context.CancelFunc) {
	bctx, cancel := context.WithCancelCause(ctx)
	if r == nil {
		return bctx, func() { cancel(context.Canceled) }
	}
	r.mu.Lock()
	epoch := r.epoch
	r.mu.Unlock()
	stop := context.AfterFunc(epoch, func() { cancel(ErrReconnected) })
	return bctx, func() {
		stop()
		cancel(context.Canceled)
	}
}
