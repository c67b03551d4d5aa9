package kv

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Write is one conditional write of a key.
type Write struct {
	Key    string
	Value  []byte
	Header nats.Header // optional
	// Expected is the key's last revision the write requires; 0 requires
	// that the key has no message at all.
	Expected uint64
	// TTL, when positive, is the message's own time to live (buckets opened
	// with a MarkerTTL).
	TTL time.Duration
}

func (b *Bucket) msg(w Write) (*nats.Msg, []jetstream.PublishOpt) {
	h := w.Header
	if h == nil {
		h = nats.Header{}
	}
	m := &nats.Msg{Subject: b.writePrefix + w.Key, Data: w.Value, Header: h}
	opts := []jetstream.PublishOpt{jetstream.WithExpectLastSequencePerSubject(w.Expected)}
	if w.TTL > 0 {
		opts = append(opts, jetstream.WithMsgTTL(w.TTL))
	}
	return m, opts
}

// Put stores w if the key's last revision is w.Expected and returns the new
// revision. A lost compare-and-swap is an error for which IsConflict holds.
func (b *Bucket) Put(ctx context.Context, w Write) (uint64, error) {
	m, opts := b.msg(w)
	ack, err := b.js.PublishMsg(ctx, m, opts...)
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// PutAsync sends w without waiting for the server's answer, which arrives
// on the returned future. A caller that stops waiting must still look at
// the future: the write may be stored after all.
func (b *Bucket) PutAsync(w Write) (jetstream.PubAckFuture, error) {
	m, opts := b.msg(w)
	return b.js.PublishMsgAsync(m, opts...)
}

// Purge places a purge marker on key that removes its earlier messages
// and itself expires after ttl (0: never). With expected 0 the purge is
// unconditional; otherwise it requires the key's last revision to be
// expected. It returns the marker's revision.
func (b *Bucket) Purge(ctx context.Context, key string, expected uint64, ttl time.Duration) (uint64, error) {
	m := nats.NewMsg(b.writePrefix + key)
	m.Header.Set(kvOperation, "PURGE")
	m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	var opts []jetstream.PublishOpt
	if ttl > 0 {
		opts = append(opts, jetstream.WithMsgTTL(ttl))
	}
	if expected != 0 {
		opts = append(opts, jetstream.WithExpectLastSequencePerSubject(expected))
	}
	ack, err := b.js.PublishMsg(ctx, m, opts...)
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// kvOperation is the header JetStream KV uses for deletes and purges.
const kvOperation = "KV-Operation"

// OperationHeader and OperationDelete make a write a delete marker (nats
// KV's own): a Write with them removes the key for readers and watches,
// and keeps the earlier revisions and the marker's own value.
const (
	OperationHeader = kvOperation
	OperationDelete = "DEL"
)

// IsConflict reports whether err is a failed compare-and-swap: the key's
// last revision was not the one expected. Replicated (R3) streams report
// it with error code 10164 instead of 10071; both are matched, and so is
// jetstream.ErrKeyRevisionMismatch from nats.go's own KV calls.
func IsConflict(err error) bool {
	if errors.Is(err, jetstream.ErrKeyExists) {
		return true
	}
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}

// IsFree reports whether a KV message's headers mark its key as free: a
// delete or purge by a client, or the marker the server places when a
// key's TTL expires.
func IsFree(h nats.Header) bool {
	if len(h) == 0 {
		return false
	}
	if op := h.Get(kvOperation); op == "DEL" || op == "PURGE" {
		return true
	}
	return h.Get(jetstream.MarkerReasonHeader) != ""
}
