package kv_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cronlock/cronlock/internal/kv"
	"github.com/cronlock/cronlock/internal/natstest"
)

// TestCheckReplicas: an existing R1 bucket checked against 3 is reported
// with both figures; against 1 it is fine; a missing bucket is not found.
func TestCheckReplicas(t *testing.T) {
	t.Parallel()
	_, js := natstest.Connect(t, natstest.RunServer(t, natstest.Options{}).ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := kv.Open(ctx, js, kv.Config{Name: "r1", Replicas: 1}); err != nil {
		t.Fatal(err)
	}
	err := kv.CheckReplicas(ctx, js, "r1", 3)
	var fewer *kv.FewerReplicasError
	if !errors.As(err, &fewer) || *fewer != (kv.FewerReplicasError{Bucket: "r1", Have: 1, Want: 3}) {
		t.Errorf("CheckReplicas(r1, 3) = %v, want a FewerReplicasError 1 < 3", err)
	}
	if err := kv.CheckReplicas(ctx, js, "r1", 1); err != nil {
		t.Errorf("CheckReplicas(r1, 1) = %v, want nil", err)
	}
	if err := kv.CheckReplicas(ctx, js, "missing", 1); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Errorf("CheckReplicas(missing) = %v, want ErrBucketNotFound", err)
	}
}
