// Package follow keeps up with the last message of every subject of a
// JetStream stream, headers only, through an ordered consumer that
// survives reconnects. Package kv builds its bucket watch on it; follow
// knows nothing of buckets, keys, locks or jobs.
package follow

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cronlock/cronlock/internal/jsapi"
)

// Handler receives the subject, stream sequence, server timestamp and
// headers of a message. Calls are sequential, in stream order.
type Handler func(subject string, seq uint64, stored time.Time, h nats.Header)

// Follower is a running follow; Stop ends it.
type Follower struct {
	stream jetstream.Stream
	nc     *nats.Conn
	cons   jetstream.Consumer
	cc     jetstream.ConsumeContext
	once   sync.Once
	// caughtUp is closed once the messages present at the start were
	// delivered (however long that takes; Start waits a short bound).
	caughtUp chan struct{}
}

// CaughtUp is closed once the handler has seen the messages that were in
// the stream when the follow started.
func (f *Follower) CaughtUp() <-chan struct{} { return f.caughtUp }

// catchUpWait bounds how long Start waits for the messages that were in the
// stream when it started. Following is an optimisation for its users, so a
// slow catch-up is not an error.
const catchUpWait = 2 * time.Second

// Start follows the subjects matching filter: fn gets the last message of
// each (in stream order), then every new one. An ordered consumer carries
// it, recreating itself after a reconnect or a gap. Start returns once fn
// has seen the messages present at the start, or after a short bound.
func Start(ctx context.Context, stream jetstream.Stream, nc *nats.Conn, filter string, fn Handler) (*Follower, error) {
	return StartSubjects(ctx, stream, nc, []string{filter}, fn)
}

// StartSubjects is Start following the subjects matching any of filters
// (one consumer, FilterSubjects): for a reader that needs only some of a
// stream's subjects, each of which it names. The filters travel in the
// consumer's create request, so a caller bounds how many it passes.
func StartSubjects(ctx context.Context, stream jetstream.Stream, nc *nats.Conn, filters []string, fn Handler) (*Follower, error) {
	return start(ctx, stream, nc, filters, true, func(m jetstream.Msg, md *jetstream.MsgMetadata) {
		fn(m.Subject(), md.Sequence.Stream, md.Timestamp, m.Headers())
	})
}

// DataHandler is a Handler that also gets the message's data.
type DataHandler func(subject string, seq uint64, stored time.Time, h nats.Header, data []byte)

// StartData is Start delivering the messages' data too: for the streams
// whose readers need every value (definitions), not only that a key
// changed.
func StartData(ctx context.Context, stream jetstream.Stream, nc *nats.Conn, filter string, fn DataHandler) (*Follower, error) {
	return start(ctx, stream, nc, []string{filter}, false, func(m jetstream.Msg, md *jetstream.MsgMetadata) {
		fn(m.Subject(), md.Sequence.Stream, md.Timestamp, m.Headers(), m.Data())
	})
}

func start(ctx context.Context, stream jetstream.Stream, nc *nats.Conn, filters []string, headersOnly bool,
	deliver func(jetstream.Msg, *jetstream.MsgMetadata)) (*Follower, error) {
	var cons jetstream.Consumer
	// A create the cluster dropped is sent again; one that was applied but
	// not answered leaves an ephemeral consumer the server deletes after
	// its inactivity threshold.
	err := jsapi.Call(ctx, func(ctx context.Context) (err error) {
		cons, err = stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
			FilterSubjects: filters,
			DeliverPolicy:  jetstream.DeliverLastPerSubjectPolicy,
			HeadersOnly:    headersOnly,
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	caughtUp := make(chan struct{})
	var caughtOnce sync.Once
	done := func() { caughtOnce.Do(func() { close(caughtUp) }) }
	cc, err := cons.Consume(func(m jetstream.Msg) {
		md, err := m.Metadata()
		if err != nil {
			return
		}
		deliver(m, md)
		if md.NumPending == 0 {
			done()
		}
	})
	if err != nil {
		return nil, err
	}
	f := &Follower{stream: stream, nc: nc, cons: cons, cc: cc, caughtUp: caughtUp}
	// Nothing to catch up with: no message will say so.
	if info := cons.CachedInfo(); info != nil && info.NumPending == 0 && info.Delivered.Stream == 0 {
		done()
	}
	t := time.NewTimer(catchUpWait)
	defer t.Stop()
	select {
	case <-caughtUp:
	case <-t.C:
	case <-ctx.Done():
	}
	return f, nil
}

// Stop ends the follow and deletes its consumer on the server (an ordered
// consumer would otherwise linger until its inactivity threshold). It waits
// a few seconds at most, and not at all while disconnected.
func (f *Follower) Stop() {
	f.once.Do(func() {
		f.cc.Stop()
		if !f.nc.IsConnected() {
			return
		}
		select {
		case <-f.cc.Closed():
		case <-time.After(catchUpWait):
		}
		info := f.cons.CachedInfo()
		if info == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), catchUpWait)
		defer cancel()
		if err := f.stream.DeleteConsumer(ctx, info.Name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return // the server drops it after its inactivity threshold
		}
	})
}
