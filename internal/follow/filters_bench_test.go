package follow_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cronlock/cronlock/internal/follow"
	"github.com/cronlock/cronlock/internal/natstest"
)

// BenchmarkStartSubjects: a follow of n keys by name (one consumer with n
// filter subjects) of a bucket of 30,000 keys, from its create until it
// has delivered the keys' last writes. The server checks a new consumer's
// filters against each other, so the time grows with the square of n.
//
//	go test -run XXX -bench StartSubjects -benchtime 3x ./internal/follow
func BenchmarkStartSubjects(b *testing.B) {
	srv := natstest.RunServer(b, natstest.Options{})
	nc, js := natstest.Connect(b, srv.ClientURL())
	ctx := context.Background()
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "many"})
	if err != nil {
		b.Fatal(err)
	}
	const keys = 30000
	for i := range keys {
		if _, err := kv.PutString(ctx, fmt.Sprintf("job-%05d", i), "x"); err != nil {
			b.Fatal(err)
		}
	}
	stream, err := js.Stream(ctx, "KV_many")
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{250, 500, 1000, 2000} {
		filters := make([]string, n)
		for i := range filters {
			filters[i] = fmt.Sprintf("$KV.many.job-%05d", i*7%keys)
		}
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			for b.Loop() {
				got := 0
				f, err := follow.StartSubjects(ctx, stream, nc, filters, func(string, uint64, time.Time, nats.Header) { got++ })
				if err != nil {
					b.Fatal(err)
				}
				<-f.CaughtUp()
				f.Stop()
				if got < n {
					b.Fatalf("delivered %d of %d keys", got, n)
				}
			}
		})
	}
}
