package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cronlock/cronlock/internal/jobstore"
	"github.com/cronlock/cronlock/internal/kv"
)

// Kinds maps a runtime job's kind to what its runs do. The run's context
// carries the job's payload (job.Payload) and its job.RunInfo.
type Kinds map[string]func(ctx context.Context) error

// FollowRuntimeJobs schedules the runtime jobs of r on s, adding,
// replacing and removing them as their definitions are put and deleted,
// until ctx is done. Every replica of a service calls it with the same
// bucket, so each tick of each runtime job runs once across them, as for
// the jobs it adds itself. It returns once the definitions stored at the
// call are scheduled, or after a few seconds.
//
// A definition whose kind is not in kinds, whose name is a job that s has
// from elsewhere (Add), or that does not validate, is not scheduled: it is
// logged (once per revision) and left in the bucket.
func (s *Scheduler) FollowRuntimeJobs(ctx context.Context, r *RuntimeJobs, kinds Kinds) error {
	f := &runtimeFollow{s: s, kinds: kinds, ours: map[string]uint64{}}
	follower, err := r.store.Bucket().FollowData(ctx, f.heard)
	if err != nil {
		return fmt.Errorf("scheduler: follow the runtime jobs of %q: %w", r.name, err)
	}
	context.AfterFunc(ctx, follower.Stop)
	return nil
}

// runtimeFollow applies the bucket's writes; the watch delivers them one
// at a time, in order.
type runtimeFollow struct {
	s     *Scheduler
	kinds Kinds
	mu    sync.Mutex
	ours  map[string]uint64 // the runtime jobs this follow added, by revision
}

func (f *runtimeFollow) heard(key string, rev uint64, _ time.Time, h nats.Header, value []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, mine := f.ours[key]; mine {
		if err := f.s.Remove(key); err != nil && !errors.Is(err, ErrUnknownJob) {
			f.s.log.Error().Err(err).Str("job", key).Msg("cannot remove the runtime job")
			return
		}
		delete(f.ours, key)
	}
	if kv.IsFree(h) {
		return
	}
	if err := f.add(key, rev, value); err != nil {
		f.s.log.Error().Err(err).Str("job", key).Uint64("revision", rev).Msg("runtime job not scheduled")
	}
}

func (f *runtimeFollow) add(key string, rev uint64, value []byte) error {
	st, err := jobstore.Decode(key, rev, value)
	if err != nil {
		return err
	}
	rj, err := decodeRuntimeJob(st)
	if err != nil {
		return err
	}
	if rj.Name != key {
		return fmt.Errorf("the definition's name %q is not its key", rj.Name)
	}
	run, ok := f.kinds[rj.Kind]
	if !ok {
		return fmt.Errorf("kind %q: no such kind in this replica's Kinds", rj.Kind)
	}
	j, err := rj.jobFor(run)
	if err != nil {
		return err
	}
	if err := f.s.Add(j); err != nil {
		return err
	}
	f.ours[key] = rev
	return nil
}
