package follow_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cronlock/cronlock/internal/follow"
	"github.com/cronlock/cronlock/internal/natstest"
)

func consumers(t *testing.T, s jetstream.Stream) int {
	t.Helper()
	n := 0
	names := s.ConsumerNames(context.Background())
	for range names.Name() {
		n++
	}
	if err := names.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// Start delivers the last message of each subject present at the start
// before it returns, then new ones; Stop deletes the consumer on the server.
func TestFollow(t *testing.T) {
	t.Parallel()
	nc, kv, stream := newBucket(t, "b")
	ctx := context.Background()

	// An empty stream: nothing to wait for.
	start := time.Now()
	empty, err := follow.Start(ctx, stream, nc, "$KV.b.>", func(string, uint64, time.Time, nats.Header) {})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Start on an empty stream took %v", d)
	}
	empty.Stop()

	for _, k := range []string{"x", "y", "x"} {
		if _, err := kv.PutString(ctx, k, "v"); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	seen := map[string]uint64{}
	got := make(chan struct{}, 10)
	f, err := follow.Start(ctx, stream, nc, "$KV.b.>", func(subject string, seq uint64, _ time.Time, _ nats.Header) {
		mu.Lock()
		seen[subject] = seq
		mu.Unlock()
		got <- struct{}{}
	})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if seen["$KV.b.x"] != 3 || seen["$KV.b.y"] != 2 || len(seen) != 2 {
		t.Errorf("after Start: %v, want the last of each subject (x@3, y@2)", seen)
	}
	mu.Unlock()
	<-got
	<-got
	if _, err := kv.PutString(ctx, "z", "v"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("a new write was not delivered")
	}
	if n := consumers(t, stream); n != 1 {
		t.Errorf("%d consumers while following, want 1 (the empty follower's was deleted)", n)
	}
	f.Stop()
	if n := consumers(t, stream); n != 0 {
		t.Errorf("%d consumers after Stop, want 0", n)
	}
}

// newBucket starts a server and creates the KV bucket name on it: the
// client connection, the bucket and its stream.
func newBucket(t *testing.T, name string) (*nats.Conn, jetstream.KeyValue, jetstream.Stream) {
	t.Helper()
	srv := natstest.RunServer(t, natstest.Options{})
	nc, js := natstest.Connect(t, srv.ClientURL())
	ctx := context.Background()
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: name})
	if err != nil {
		t.Fatal(err)
	}
	stream, err := js.Stream(ctx, "KV_"+name)
	if err != nil {
		t.Fatal(err)
	}
	return nc, kv, stream
}
