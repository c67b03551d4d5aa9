// Package liveout carries the output of running job runs to whoever follows
// them, as NATS core messages: nothing is stored, a message nobody is
// subscribed to is dropped by the server, and a follower sees only what is
// produced while it follows.
//
// A Stream is one run's side: an io.Writer that never blocks (the job
// stalls while its output is not read), in front of a bounded buffer that a
// goroutine of its own publishes from, coalesced into messages of at most
// MaxMessage bytes and paced to at most BytesPerSecond. Output that does
// not fit in the buffer is dropped and counted; the next message carries
// the count (HeaderDropped) and followers show it as DroppedMarker. Every
// message carries the run's identity and a sequence number (HeaderSeq,
// from 1 for each attempt of a run) so that a follower detects messages it
// missed; the last one (HeaderEnd) says that the attempt ended, with its
// exit code when it had one.
package liveout

import (
	"bytes"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// Bounds of one run's stream. A follower is a person or a page: 1 MiB/s is
// more than either reads, and keeps a flooding job from crowding the
// connection that the replica's lock renewals use.
const (
	// MaxMessage is the largest payload of a message (the server's
	// max_payload is 1 MB by default).
	MaxMessage = 32 << 10
	// BufferSize bounds the bytes waiting to be published, per run.
	BufferSize = 256 << 10
	// BytesPerSecond paces the publishing of one run's output.
	BytesPerSecond = 1 << 20
)

// Headers of the messages. Tick is RFC 3339 with nanoseconds, in UTC.
const (
	HeaderJob      = "Cronlock-Job"
	HeaderTick     = "Cronlock-Tick"
	HeaderOwner    = "Cronlock-Owner"
	HeaderToken    = "Cronlock-Token"
	HeaderAttempt  = "Cronlock-Attempt"
	HeaderSeq      = "Cronlock-Seq"
	HeaderDropped  = "Cronlock-Dropped"   // bytes dropped just before this message's data
	HeaderEnd      = "Cronlock-End"       // "true" on the attempt's last message
	HeaderExitCode = "Cronlock-Exit-Code" // on the last message, when the command exited
	HeaderError    = "Cronlock-Error"     // on the last message, when the attempt failed
)

// Publisher is what a Stream publishes with; *nats.Conn is one.
type Publisher interface {
	PublishMsg(m *nats.Msg) error
	// IsConnected is asked before each message: while the connection is
	// down, output is dropped rather than left in the client's reconnect
	// buffer, which the lock's writes need.
	IsConnected() bool
}

// Run identifies one attempt of a run.
type Run struct {
	Job     string
	Tick    time.Time
	Owner   string
	Token   uint64
	Attempt int
}

// Stream publishes one attempt's output; see the package documentation.
// Write may be called concurrently; End once, after the last Write.
type Stream struct {
	pub     Publisher
	subject string
	run     Run

	mu      sync.Mutex
	buf     []byte // waiting to be published, at most BufferSize
	dropped int64  // bytes dropped since the last message
	ending  bool
	exit    *int
	errText string

	wake chan struct{} // a Write or End happened
	done chan struct{} // the publisher has sent the last message
	seq  uint64        // the publisher's
}

// Start starts publishing run's output on subject.
func Start(pub Publisher, subject string, run Run) *Stream {
	s := &Stream{pub: pub, subject: subject, run: run, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go s.publish()
	return s
}

// Write queues p, or counts it dropped when the buffer has no room for all
// of it. It never blocks on the network and never fails.
func (s *Stream) Write(p []byte) (int, error) {
	s.mu.Lock()
	// The publisher empties the buffer before it waits for a poke (take
	// decides under mu): only a write to an empty buffer needs to wake it.
	wake := len(s.buf) == 0
	switch {
	case s.ending:
	case len(s.buf)+len(p) > BufferSize:
		s.dropped += int64(len(p))
	default:
		if s.buf == nil {
			s.buf = make([]byte, 0, BufferSize)
		}
		s.buf = append(s.buf, p...)
	}
	s.mu.Unlock()
	if wake {
		s.poke()
	}
	return len(p), nil
}

func (s *Stream) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// End publishes what is still buffered, without pacing, then the last
// message with exitCode (nil: the command did not exit) and errText (""
// for success), and returns once they are handed to the connection.
func (s *Stream) End(exitCode *int, errText string) {
	s.mu.Lock()
	s.ending, s.exit, s.errText = true, exitCode, errText
	s.mu.Unlock()
	s.poke()
	<-s.done
}

// publish is the Stream's goroutine.
func (s *Stream) publish() {
	defer close(s.done)
	var scratch []byte
	for range s.wake {
		for {
			data, dropped, ending := s.take(&scratch)
			if len(data) == 0 {
				// Only a count of dropped bytes: it goes with the next
				// message. Sending it alone would retry for as long as
				// the connection is down (each failed send adds to the
				// count), and End would wait for NATS to come back.
				s.keepDropped(dropped)
				if ending {
					s.send(s.endMsg())
					return
				}
				break
			}
			s.send(s.msg(data, dropped))
			if !ending {
				time.Sleep(time.Duration(len(data)) * time.Second / BytesPerSecond)
			}
		}
	}
}

// take moves the next message's data (at most MaxMessage bytes, cut after
// a newline when there is one) into scratch, and returns it with the
// dropped count to report and whether End was called.
func (s *Stream) take(scratch *[]byte) (data []byte, dropped int64, ending bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.buf)
	if n > MaxMessage {
		n = MaxMessage
		if i := bytes.LastIndexByte(s.buf[:n], '\n'); i >= 0 {
			n = i + 1
		}
	}
	*scratch = append((*scratch)[:0], s.buf[:n]...)
	s.buf = s.buf[:copy(s.buf, s.buf[n:])]
	dropped, s.dropped = s.dropped, 0
	return *scratch, dropped, s.ending
}

// keepDropped adds n back to the dropped count, for the next message.
func (s *Stream) keepDropped(n int64) {
	s.mu.Lock()
	s.dropped += n
	s.mu.Unlock()
}

// send publishes m, or counts its data dropped for the next message when
// the connection is down or refuses it.
func (s *Stream) send(m *nats.Msg) {
	if s.pub.IsConnected() && s.pub.PublishMsg(m) == nil {
		return
	}
	n := int64(len(m.Data))
	if d, err := strconv.ParseInt(m.Header.Get(HeaderDropped), 10, 64); err == nil {
		n += d
	}
	s.seq-- // the follower sees no gap for a message never sent
	s.mu.Lock()
	s.dropped += n
	s.mu.Unlock()
}

// msg is the next message, carrying data and the dropped count before it.
func (s *Stream) msg(data []byte, dropped int64) *nats.Msg {
	s.seq++
	m := &nats.Msg{Subject: s.subject, Data: data, Header: nats.Header{}}
	h := m.Header
	h.Set(HeaderJob, s.run.Job)
	h.Set(HeaderTick, s.run.Tick.UTC().Format(time.RFC3339Nano))
	h.Set(HeaderOwner, s.run.Owner)
	h.Set(HeaderToken, strconv.FormatUint(s.run.Token, 10))
	h.Set(HeaderAttempt, strconv.Itoa(s.run.Attempt))
	h.Set(HeaderSeq, strconv.FormatUint(s.seq, 10))
	if dropped > 0 {
		h.Set(HeaderDropped, strconv.FormatInt(dropped, 10))
	}
	return m
}

// endMsg is the last message.
func (s *Stream) endMsg() *nats.Msg {
	s.mu.Lock()
	dropped, exit, errText := s.dropped, s.exit, s.errText
	s.dropped = 0
	s.mu.Unlock()
	m := s.msg(nil, dropped)
	m.Header.Set(HeaderEnd, "true")
	if exit != nil {
		m.Header.Set(HeaderExitCode, strconv.Itoa(*exit))
	}
	if errText != "" {
		m.Header.Set(HeaderError, errText)
	}
	return m
}
