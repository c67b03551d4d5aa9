package liveout

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
)

// Bounds of a follower's subscription: past them the client drops messages
// (a slow follower), which the sequence numbers reveal as Event.Lost.
const (
	followPendingMsgs  = 256
	followPendingBytes = 16 << 20
)

// Event is one message of a run's stream, as a follower sees it.
type Event struct {
	Run Run
	Seq uint64
	// Data is the output, as the job wrote it.
	Data []byte
	// Dropped counts the bytes the replica dropped just before Data.
	Dropped int64
	// Lost counts this attempt's messages that did not reach the follower
	// before this one (a slow follower, a reconnect), when it saw an
	// earlier one.
	Lost uint64
	// End marks the attempt's last message, with the command's exit code
	// (nil if it did not exit) and error ("" for success).
	End      bool
	ExitCode *int
	Error    string
}

// Markers returns the lines a follower shows before e.Data for what it
// missed: DroppedMarker and LostMarker, "" for none.
func (e Event) Markers() string {
	s := ""
	if e.Lost > 0 {
		s += LostMarker(e.Lost)
	}
	if e.Dropped > 0 {
		s += DroppedMarker(e.Dropped)
	}
	return s
}

// DroppedMarker is the line that stands for n bytes of output dropped.
func DroppedMarker(n int64) string { return fmt.Sprintf("[... %d bytes dropped]\n", n) }

// LostMarker is the line that stands for n messages the follower missed.
func LostMarker(n uint64) string { return fmt.Sprintf("[... %d messages lost]\n", n) }

// Follower receives the messages of one subject in order.
type Follower struct {
	sub  *nats.Subscription
	last map[Run]uint64 // the last sequence number seen per attempt
}

// Follow subscribes to subject. Stop it with Stop.
func Follow(nc *nats.Conn, subject string) (*Follower, error) {
	sub, err := nc.SubscribeSync(subject)
	if err != nil {
		return nil, err
	}
	if err := sub.SetPendingLimits(followPendingMsgs, followPendingBytes); err != nil {
		_ = sub.Unsubscribe()
		return nil, err
	}
	return &Follower{sub: sub, last: map[Run]uint64{}}, nil
}

// readyTimeout bounds Ready when ctx has no deadline.
const readyTimeout = 10 * time.Second

// Ready waits until the server has the subscription, so that a run
// started afterwards is seen from its first message.
func (f *Follower) Ready(ctx context.Context, nc *nats.Conn) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, readyTimeout)
		defer cancel()
	}
	return nc.FlushWithContext(ctx)
}

// Next returns the next event, waiting until ctx is done. A message that
// is not a stream's (no sequence number) is skipped.
func (f *Follower) Next(ctx context.Context) (Event, error) {
	for {
		m, err := f.sub.NextMsgWithContext(ctx)
		if err != nil {
			return Event{}, err
		}
		e, ok := decode(m)
		if !ok {
			continue
		}
		if prev, seen := f.last[e.Run]; seen && e.Seq > prev+1 {
			e.Lost = e.Seq - prev - 1
		}
		f.last[e.Run] = e.Seq
		if e.End {
			delete(f.last, e.Run)
		}
		return e, nil
	}
}

// Stop unsubscribes.
func (f *Follower) Stop() { _ = f.sub.Unsubscribe() }

// decode reads a message of a Stream.
func decode(m *nats.Msg) (Event, bool) {
	h := m.Header
	seq, err := strconv.ParseUint(h.Get(HeaderSeq), 10, 64)
	if err != nil {
		return Event{}, false
	}
	e := Event{Seq: seq, Data: m.Data, End: h.Get(HeaderEnd) == "true", Error: h.Get(HeaderError)}
	e.Run.Job = h.Get(HeaderJob)
	e.Run.Owner = h.Get(HeaderOwner)
	e.Run.Tick, _ = time.Parse(time.RFC3339Nano, h.Get(HeaderTick))
	e.Run.Token, _ = strconv.ParseUint(h.Get(HeaderToken), 10, 64)
	e.Run.Attempt, _ = strconv.Atoi(h.Get(HeaderAttempt))
	e.Dropped, _ = strconv.ParseInt(h.Get(HeaderDropped), 10, 64)
	if c, err := strconv.Atoi(h.Get(HeaderExitCode)); err == nil {
		e.ExitCode = &c
	}
	return e, true
}
