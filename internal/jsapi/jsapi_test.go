package jsapi

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestUnanswered: which failures are worth sending the request again.
func TestUnanswered(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  error
		want bool
	}{
		{context.DeadlineExceeded, true},
		{fmt.Errorf("open bucket: %w", context.DeadlineExceeded), true},
		{nats.ErrTimeout, true},
		{nats.ErrNoResponders, false}, // no JetStream on the server: say so at once
		{&jetstream.APIError{Code: 400, ErrorCode: 10005, Description: "no suitable peers for placement, peer offline"}, true},
		{fmt.Errorf("create: %w", &jetstream.APIError{Code: 503, ErrorCode: 10008}), true},
		{context.Canceled, false},
		{jetstream.ErrBucketNotFound, false},
		{jetstream.ErrBucketExists, false},
		{&jetstream.APIError{Code: 500, ErrorCode: 10074, Description: "replicas > 1 not supported in non-clustered mode"}, false},
		{jetstream.ErrJetStreamNotEnabled, false},
	} {
		if got := Unanswered(c.err); got != c.want {
			t.Errorf("Unanswered(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
