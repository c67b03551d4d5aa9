// Package jsapi makes one JetStream API call (create or look up a stream,
// a bucket or a consumer) robust to a lost request: the call is retried
// with a bounded time per attempt until the caller's context ends.
//
// A JetStream API request that a cluster drops (the meta or stream leader
// changes while it is in flight, a route reconnects) is never answered,
// and the client waits out the whole context: a start-up given 30 s then
// fails after 30 s although a second request would have been answered at
// once. nats.go recreates its own ordered consumers the same way (10 s per
// attempt, retried). It owns nothing else: what to call is the caller's.
package jsapi

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Attempt is the time one request may take before it is sent again: the
// default request timeout of nats.go's JetStream API, ample for an answer
// from a loaded cluster.
const Attempt = 5 * time.Second

// Call runs fn with a context bounded by Attempt, and again, after a short
// pause, while it fails without an answer (timed out) or with a cluster's
// "not now" (no peers for placement, temporarily unavailable) and ctx
// lasts. It returns fn's last error. fn must be safe to repeat: a create
// whose reply was lost meets an "already exists" the second time.
func Call(ctx context.Context, fn func(context.Context) error) error {
	pause := 50 * time.Millisecond
	for {
		actx, cancel := context.WithTimeout(ctx, Attempt)
		err := fn(actx)
		cancel()
		if err == nil || !Unanswered(err) || ctx.Err() != nil {
			return err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		pause = min(2*pause, time.Second)
	}
}

// Codes of JetStream API errors a cluster gives while it settles (a peer
// restarting in a rollout, leaders being elected), which a later request
// does not get.
const (
	codeNoPeers      jetstream.ErrorCode = 10005 // no suitable peers for placement (peer offline)
	codeNotAvailable jetstream.ErrorCode = 10008 // JetStream system temporarily unavailable
)

// Unanswered reports whether err means the request got no answer, or the
// cluster's answer for "not now", so sending it again may succeed.
func Unanswered(err error) bool {
	var api *jetstream.APIError
	if errors.As(err, &api) && (api.ErrorCode == codeNoPeers || api.ErrorCode == codeNotAvailable) {
		return true
	}
	// Not nats.ErrNoResponders: no JetStream answering at all is a server
	// without JetStream (a cluster settling still has responders), which
	// waiting does not mend; the caller should say so at once.
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)
}
