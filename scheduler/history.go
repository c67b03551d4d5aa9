package scheduler

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cronlock/cronlock/internal/history"
	"github.com/cronlock/cronlock/internal/kv"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/lock"
)

// History is the run history shared by every replica: per job, the last
// claimed tick, the recent runs, a pending rerun and a suspension, in one
// key of a KV bucket, and each run's output under a key of its own. The
// scheduler writes it; operator commands open it with OpenHistory, without
// a Scheduler.
type History struct {
	// store keeps the records; in the scheduler's History it has a cache
	// of the states this replica wrote or read last (history.Cache). A
	// History from OpenHistory has none: operator commands read the key
	// every time.
	store *history.Store
	lease time.Duration // see HistoryOptions.LeaseDuration
	// repairs, in the scheduler's History, repair the records that cannot
	// be trusted as they are read for an update (see anomaly.go). Nil in a
	// History from OpenHistory: operator commands change no such record.
	repairs *repairs
}

// HistoryOptions configure OpenHistory. Zero values select the defaults.
type HistoryOptions struct {
	// Bucket is the KV bucket. Default DefaultHistoryBucket.
	Bucket string
	// Replicas is the bucket's replication factor when OpenHistory creates
	// it. Default 1.
	Replicas int
	// Size is the number of runs kept per job. Default DefaultHistorySize.
	Size int
	// LeaseDuration is the jobs' lease (lock.Options.LeaseDuration), for
	// the expiry that Holder and Locks report. Default
	// lock.DefaultLeaseDuration.
	LeaseDuration time.Duration
}

// OpenHistory opens the history bucket, creating it when missing.
func OpenHistory(ctx context.Context, js jetstream.JetStream, opts HistoryOptions) (*History, error) {
	if opts.Bucket == "" {
		opts.Bucket = DefaultHistoryBucket
	}
	if opts.Size <= 0 {
		opts.Size = DefaultHistorySize
	}
	b, err := kv.Open(ctx, js, kv.Config{
		Name:        opts.Bucket,
		Description: "cronlock: last claimed tick and recent runs per job",
		Replicas:    opts.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("scheduler: history: %w", err)
	}
	if opts.LeaseDuration <= 0 {
		opts.LeaseDuration = lock.DefaultLeaseDuration
	}
	return &History{store: history.NewStore(b, opts.Size, nil), lease: opts.LeaseDuration}, nil
}

// Runs returns the job's recent runs, newest first, without their output
// (see Output).
func (h *History) Runs(ctx context.Context, name string) ([]Run, error) {
	st, err := h.State(ctx, name)
	if err != nil {
		return nil, err
	}
	return st.Runs, nil
}

// JobState is a job's shared state as operators see it.
type JobState struct {
	Runs        []Run // newest first, without output
	Suspended   *Suspension
	LastSuccess time.Time
	LastFailure time.Time
	// Definition is the job.Job.Definition of the job's last claim (""
	// when none was recorded): see definition.go.
	Definition string
	// Holder is who holds the job's lock (see Holder), nil while it is
	// free: the lock is in the same record.
	Holder *lock.Holder
	// Failures counts the job's failed runs in a row (since its last
	// success or resume): see job.Job.SuspendAfterFailures.
	Failures int
	// Backfill is the job's backfill in progress, nil if none.
	Backfill *Backfill
}

// State returns the job's shared state; name may also be the key of an
// every_replica record (ReplicaRecord).
func (h *History) State(ctx context.Context, name string) (JobState, error) {
	if err := ValidateRecord(name); err != nil {
		return JobState{}, err
	}
	st, _, err := h.get(ctx, name)
	if err != nil {
		return JobState{}, fmt.Errorf("scheduler: history: %w", err)
	}
	slices.Reverse(st.Runs)
	out := JobState{Runs: st.Runs, Suspended: st.Suspended, LastSuccess: st.LastSuccess, LastFailure: st.LastFailure,
		Definition: st.Definition, Failures: st.Failures}
	if st.Backfill != nil {
		b := publicBackfill(st.Backfill)
		out.Backfill = &b
	}
	if st.Holder != nil {
		hd := h.describe(name, st.Holder)
		out.Holder = &hd
	}
	return out, nil
}

// Output returns the output tail kept for run, or "" when none is kept
// (no output, or a newer run took its place).
func (h *History) Output(ctx context.Context, run Run) (string, error) {
	return h.store.Output(ctx, run)
}

func (h *History) get(ctx context.Context, name string) (history.Record, uint64, error) {
	return h.store.Get(ctx, name)
}

// put writes st if the key is still at rev (0: the key must not exist),
// dropping what no longer applies first, and returns the new revision, or
// 0 on a lost compare-and-swap.
func (h *History) put(ctx context.Context, name string, st *history.Record, rev uint64) (uint64, error) {
	h.tidy(st)
	return h.store.Put(ctx, name, st, rev)
}

// tidy makes st as it is written: its last runs only, without a cancel
// request or a queued tick that no longer apply.
func (h *History) tidy(st *history.Record) {
	if over := len(st.Runs) - h.store.Size(); over > 0 {
		st.Runs = st.Runs[over:]
	}
	dropStaleCancel(st)
	dropStaleQueued(st)
}

// update is history.Store.Update (guess, cache, compare-and-swap retries)
// of the record read with repairs (readPeek) and tidied before each write.
func (h *History) update(ctx context.Context, name string, guess *history.Record, rev uint64, change func(*history.Record) bool) (history.Record, uint64, error) {
	return h.updateAt(ctx, name, guess, rev, func(st *history.Record, _ uint64) bool { return change(st) })
}

// updateAt is update with change also given the revision of the state it
// changes (the hold's expiry is measured per revision: see hold.go).
func (h *History) updateAt(ctx context.Context, name string, guess *history.Record, rev uint64, change func(*history.Record, uint64) bool) (history.Record, uint64, error) {
	return h.updatePeek(ctx, name, guess, rev, nil, change)
}

// updatePeek is updateAt whose reads of the record ask settled first (see
// history.Store.GetPeek): it fails with history.ErrSettled, having written nothing, when the
// headers of the record it reads settle it.
func (h *History) updatePeek(ctx context.Context, name string, guess *history.Record, rev uint64, settled func(nats.Header) bool, change func(*history.Record, uint64) bool) (history.Record, uint64, error) {
	read := func(ctx context.Context) (history.Record, uint64, error) { return h.readPeek(ctx, name, settled) }
	return h.store.Update(ctx, name, guess, rev, read, func(st *history.Record, rev uint64) bool {
		if !change(st, rev) {
			return false
		}
		h.tidy(st)
		return true
	})
}

// Suspend marks the job suspended for every replica: from the moment
// their watch delivers it (well within a second), they start none of its
// ticks and record them as skipped. A run in progress goes on. by labels
// who suspended it. Suspending a suspended job changes nothing.
func (h *History) Suspend(ctx context.Context, name, by string, now time.Time) error {
	if err := job.ValidateName(name); err != nil {
		return err
	}
	_, _, err := h.update(ctx, name, nil, 0, func(st *history.Record) bool {
		if st.Suspended != nil {
			return false
		}
		st.Suspended = &Suspension{At: now.UTC(), By: by}
		return true
	})
	return err
}

// Resume lifts a suspension and starts the count of failures in a row
// (job.Job.SuspendAfterFailures) again. The ticks that passed while the
// job was suspended are not caught up. An every_replica job's records of
// each replica are resumed too (resumeReplicas).
func (h *History) Resume(ctx context.Context, name string) error {
	if err := job.ValidateName(name); err != nil {
		return err
	}
	if err := h.resume(ctx, name); err != nil {
		return err
	}
	return h.resumeReplicas(ctx, name)
}

// resume lifts the suspension of the record key.
func (h *History) resume(ctx context.Context, key string) error {
	_, _, err := h.update(ctx, key, nil, 0, func(st *history.Record) bool {
		if st.Suspended == nil && st.Failures == 0 {
			return false
		}
		st.Suspended, st.Failures = nil, 0 // the failures in a row count again from here
		return true
	})
	return err
}

// unholdAny frees the job's hold if the record holds one of p's leases,
// recording its run as not started when its take's was (see
// dropUnstarted), and returns the entries it changed. It returns a nil
// error when it freed the hold or the record holds none of them.
func (h *History) unholdAny(ctx context.Context, name string, p pendingHolds) ([]Run, error) {
	var dropped []Run
	_, _, err := h.update(ctx, name, nil, 0, func(st *history.Record) bool {
		dropped = nil
		if st.Holder == nil || !slices.Contains(p.ids, st.Holder.Lease) {
			return false
		}
		if p.unstarted[st.Holder.Lease] {
			dropped = dropUnstarted(st)
		} else {
			st.Holder = nil
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	return dropped, nil
}

// unhold frees the job's hold if the record holds lease id.
func (h *History) unhold(ctx context.Context, name, id string) error {
	_, err := h.unholdAny(ctx, name, pendingHolds{ids: []string{id}})
	return err
}
