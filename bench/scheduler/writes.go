package main

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// streamInfoTimeout bounds listing the streams and reading their state.
const streamInfoTimeout = 5 * time.Second

// streamSeqs is every stream's last sequence, by bucket: the KV bucket X is
// stream KV_X and is named X; any other stream by its own name. The
// difference of two snapshots is the number of messages the server stored
// in between: successful writes, purge markers (a lock release) and the
// server's own TTL-expiry markers. A write refused by a compare-and-swap
// (a lost race) is not stored and so not counted here; it is a publish
// answered with an error acknowledgement (not a JS API request, so not in
// the JS API errors), seen in the server's messages in and out and in the
// replicas' cronlock_lock_acquire_seconds{result="not_acquired"} count.
func streamSeqs(ctx context.Context, js jetstream.JetStream) map[string]uint64 {
	ctx, cancel := context.WithTimeout(ctx, streamInfoTimeout)
	defer cancel()
	out := map[string]uint64{}
	l := js.ListStreams(ctx)
	for info := range l.Info() {
		out[bucketName(info.Config.Name)] = info.State.LastSeq
	}
	return out
}

func bucketName(stream string) string {
	if b, ok := strings.CutPrefix(stream, "KV_"); ok {
		return b
	}
	return stream
}

// writesBy is the stored writes between two snapshots by bucket, divided by
// per (job-ticks, or 1 for totals); buckets without a write are left out.
func writesBy(s0, s1 serverSnap, per float64) map[string]float64 {
	out := map[string]float64{}
	for name, last := range s1.streams {
		if first := s0.streams[name]; last > first {
			out[name] = float64(last-first) / per
		}
	}
	return out
}

func totalWrites(s0, s1 serverSnap) uint64 {
	var n uint64
	for name, last := range s1.streams {
		if first := s0.streams[name]; last > first {
			n += last - first
		}
	}
	return n
}

// sumWrites adds up a writesBy map.
func sumWrites(m map[string]float64) float64 {
	var t float64
	for _, k := range slices.Sorted(maps.Keys(m)) {
		t += m[k]
	}
	return t
}
