package liveout_test

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cronlock/cronlock/internal/liveout"
	"github.com/cronlock/cronlock/internal/natstest"
)

// A flood written to a Stream never blocks the writer, and a follower gets
// every byte either as data or counted dropped, in messages of at most
// MaxMessage bytes without a gap in their sequence, then the end with the
// exit code.
func TestStreamBoundedAndAccounted(t *testing.T) {
	t.Parallel()
	nc, _ := natstest.Connect(t, natstest.RunServer(t, natstest.Options{}).ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	f, err := liveout.Follow(nc, "out.job")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	if err := f.Ready(ctx, nc); err != nil {
		t.Fatal(err)
	}
	s := liveout.Start(nc, "out.job", liveout.Run{Job: "job", Tick: time.Now(), Owner: "r1", Token: 7, Attempt: 1})
	line := append(bytes.Repeat([]byte("a"), 99), '\n')
	const lines = 50_000 // 5 MB
	start := time.Now()
	for range lines {
		s.Write(line)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("writing 5 MB took %v: the writer waited for the network", took)
	}
	code := 3
	s.End(&code, "exit 3")
	var got, dropped int64
	for {
		e, err := f.Next(ctx)
		if err != nil {
			t.Fatalf("Next: %v after %d bytes and %d dropped", err, got, dropped)
		}
		if e.Lost > 0 || len(e.Data) > liveout.MaxMessage || e.Run.Token != 7 || e.Run.Owner != "r1" {
			t.Fatalf("message %d: %d lost, %d bytes, run %+v", e.Seq, e.Lost, len(e.Data), e.Run)
		}
		got += int64(len(e.Data))
		dropped += e.Dropped
		if e.End {
			if e.ExitCode == nil || *e.ExitCode != 3 || e.Error != "exit 3" {
				t.Errorf("end: exit code %v, error %q; want 3, exit 3", e.ExitCode, e.Error)
			}
			break
		}
	}
	if got+dropped != lines*100 || dropped == 0 {
		t.Errorf("%d bytes received + %d dropped, want %d written with some dropped", got, dropped, lines*100)
	}
}

// downPublisher is a connection that is down: nothing can be sent.
type downPublisher struct{ sends atomic.Int64 }

func (p *downPublisher) PublishMsg(*nats.Msg) error { p.sends.Add(1); return nats.ErrConnectionClosed }
func (p *downPublisher) IsConnected() bool          { return false }

// While the connection is down, output is dropped and End returns at
// once: it does not wait for NATS, and the publisher does not spin
// retrying the count of what it dropped.
func TestEndDoesNotWaitForADownConnection(t *testing.T) {
	t.Parallel()
	pub := &downPublisher{}
	s := liveout.Start(pub, "out", liveout.Run{Job: "j"})
	if _, err := s.Write([]byte("a line\n")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the publisher tries to send the line
	ended := make(chan struct{})
	go func() {
		s.End(nil, "")
		close(ended)
	}()
	select {
	case <-ended:
	case <-time.After(2 * time.Second):
		t.Fatal("End waited for a connection that is down")
	}
}
