package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// locksReadTimeout bounds LocksHeld's reads.
const locksReadTimeout = 10 * time.Second

// LocksHeld lists the locks held in the cluster at url, read directly
// (through no proxy): the jobs' locks, which are their state records in
// the history bucket (a record with a "holder"), then the keys of the lock
// bucket, which cronlock no longer writes for jobs but a replica of an
// older release would. An entry that cannot be read is listed with why.
func LocksHeld(url string) []string {
	nc, err := nats.Connect(url, nats.Timeout(5*time.Second))
	if err != nil {
		return []string{"(cannot connect to read the buckets: " + err.Error() + ")"}
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return []string{"(jetstream: " + err.Error() + ")"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), locksReadTimeout)
	defer cancel()
	out := heldJobs(ctx, js)
	return append(out, lockKeys(ctx, js)...)
}

// heldJobs lists the job records of the history bucket that hold their
// job's lock, as "job holder=<hold> (history rev N)".
func heldJobs(ctx context.Context, js jetstream.JetStream) []string {
	keys, kv, err := bucketKeys(ctx, js, HistoryBucket)
	if err != nil {
		return []string{"(history bucket: " + err.Error() + ")"}
	}
	var out []string
	for _, k := range keys {
		if strings.Contains(k, "/") {
			continue // a run's output, not a job's record
		}
		e, err := kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			out = append(out, fmt.Sprintf("%s (history: %v)", k, err))
			continue
		}
		var rec struct {
			Holder json.RawMessage `json:"holder"`
		}
		if err := json.Unmarshal(e.Value(), &rec); err != nil {
			out = append(out, fmt.Sprintf("%s (history rev %d: not a job record: %v)", k, e.Revision(), err))
			continue
		}
		if len(rec.Holder) > 0 && string(rec.Holder) != "null" {
			out = append(out, fmt.Sprintf("%s holder=%s (history rev %d)", k, rec.Holder, e.Revision()))
		}
	}
	return out
}

// lockKeys lists the keys of the lock bucket, as "key=value (rev N)".
func lockKeys(ctx context.Context, js jetstream.JetStream) []string {
	keys, kv, err := bucketKeys(ctx, js, LockBucket)
	if err != nil {
		return []string{"(lock bucket: " + err.Error() + ")"}
	}
	var out []string
	for _, k := range keys {
		e, err := kv.Get(ctx, k)
		if err == nil {
			out = append(out, fmt.Sprintf("%s=%s (rev %d)", k, e.Value(), e.Revision()))
		} else {
			out = append(out, k)
		}
	}
	return out
}

// bucketKeys returns the keys of the bucket; none (and no error) when it
// is empty or does not exist.
func bucketKeys(ctx context.Context, js jetstream.JetStream, bucket string) ([]string, jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	keys, err := kv.Keys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, kv, nil
	}
	return keys, kv, err
}
