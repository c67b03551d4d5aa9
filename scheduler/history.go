package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

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
	bucket *kv.Bucket
	size   int
	lease  time.Duration // see HistoryOptions.LeaseDuration
	// cache saves the scheduler reads of the states it wrote or read last (see
	// stateCache). Nil in a History from OpenHistory: operator commands
	// read the key every time.
	cache *stateCache
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

// Headers on every write of a job's state, so replicas follow claims,
// suspensions, reruns and results with a headers-only watch instead of
// fetching whole histories.
const (
	lastTickHeader    = "Cronlock-Last-Tick"    // RFC 3339 (nanoseconds)
	suspendedHeader   = "Cronlock-Suspended"    // "1" while suspended
	rerunHeader       = "Cronlock-Rerun"        // the tick waiting for a rerun
	lastSuccessHeader = "Cronlock-Last-Success" // Unix seconds
	lastFailureHeader = "Cronlock-Last-Failure" // Unix seconds
	runIDHeader       = "Cronlock-Run"          // on an output: the run's ID
)

// maxCASRetries bounds read-modify-write loops on one key. Only replicas
// finishing, catching up or recording runs of the same job contend, so a
// few rounds always suffice; more means something is wrong.
const maxCASRetries = 8

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
	return &History{bucket: b, size: opts.Size, lease: opts.LeaseDuration}, nil
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
		b := st.Backfill.public()
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
	e, err := h.bucket.Last(ctx, h.outputKey(run))
	if err != nil || e == nil || e.Free || e.Header.Get(runIDHeader) != strconv.FormatUint(run.ID, 10) {
		return "", err
	}
	return string(e.Value), nil
}

// outputKey is where a run's output lives. '/' cannot occur in a job name,
// so these keys never meet a job's state key; the ID modulo size+1 keeps at
// most size+1 outputs per job, more than the runs kept.
func (h *History) outputKey(run Run) string {
	return fmt.Sprintf("%s/output/%d", run.Job, run.ID%uint64(h.size+1))
}

// putOutput stores a run's output under its own key.
func (h *History) putOutput(ctx context.Context, run Run) error {
	e, err := h.bucket.Last(ctx, h.outputKey(run))
	if err != nil {
		return err
	}
	var rev uint64
	if e != nil {
		rev = e.Revision
	}
	_, err = h.bucket.Put(ctx, kv.Write{Key: h.outputKey(run), Value: []byte(run.Output), Expected: rev,
		Header: nats.Header{runIDHeader: []string{strconv.FormatUint(run.ID, 10)}}})
	return err
}

func (h *History) get(ctx context.Context, name string) (jobState, uint64, error) {
	return h.getPeek(ctx, name, nil)
}

// errSettled: a read gave up before decoding the job's record, because
// its headers show that the change it was read for would refuse it
// (getPeek).
var errSettled = errors.New("settled by the record's headers")

// getPeek is get, which first asks settled, if not nil, whether the
// record's headers settle the read's purpose: then it decodes nothing and
// fails with errSettled. Decoding a record of 20 runs is most of the CPU
// of a replica that reads a record only to find its tick claimed.
func (h *History) getPeek(ctx context.Context, name string, settled func(nats.Header) bool) (jobState, uint64, error) {
	e, err := h.bucket.Last(ctx, name)
	if err != nil || e == nil {
		return jobState{}, 0, err
	}
	if e.Free {
		return jobState{}, e.Revision, nil
	}
	if settled != nil && settled(e.Header) {
		return jobState{}, e.Revision, errSettled
	}
	var st jobState
	if err := json.Unmarshal(e.Value, &st); err != nil {
		return jobState{}, 0, &CorruptError{Job: name, Revision: e.Revision, Err: err, value: e.Value, header: e.Header}
	}
	return st, e.Revision, nil
}

// put writes st if the key is still at rev (0: the key must not exist) and
// returns the new revision, or 0 on a lost compare-and-swap.
func (h *History) put(ctx context.Context, name string, st *jobState, rev uint64) (uint64, error) {
	if over := len(st.Runs) - h.size; over > 0 {
		st.Runs = st.Runs[over:]
	}
	st.dropStaleCancel()
	st.dropStaleQueued()
	data, err := st.appendJSON(make([]byte, 0, 256+256*len(st.Runs))) // outputs live under their own keys
	if err != nil {
		return 0, err
	}
	newRev, err := h.bucket.Put(ctx, kv.Write{Key: name, Value: data, Header: stateHeader(st), Expected: rev})
	if kv.IsConflict(err) {
		return 0, nil
	}
	return newRev, err
}

// stateHeader summarises st for the watch (see the header constants).
func stateHeader(st *jobState) nats.Header {
	hdr := nats.Header{}
	if !st.LastTick.IsZero() {
		hdr.Set(lastTickHeader, st.LastTick.UTC().Format(time.RFC3339Nano))
	}
	if st.Suspended != nil {
		hdr.Set(suspendedHeader, "1")
	}
	if st.Rerun != nil {
		hdr.Set(rerunHeader, st.Rerun.Tick.UTC().Format(time.RFC3339Nano))
	}
	if !st.LastSuccess.IsZero() {
		hdr.Set(lastSuccessHeader, strconv.FormatInt(st.LastSuccess.Unix(), 10))
	}
	if !st.LastFailure.IsZero() {
		hdr.Set(lastFailureHeader, strconv.FormatInt(st.LastFailure.Unix(), 10))
	}
	addRunningOn(hdr, st)
	if st.Holder != nil {
		hdr.Set(holderHeader, st.Holder.Lease)
	}
	if st.Cancel != nil {
		hdr.Set(cancelHeader, st.Cancel.Lease)
	}
	if !st.Queued.IsZero() {
		hdr.Set(queuedHeader, st.Queued.UTC().Format(time.RFC3339Nano))
	}
	if st.Backfill != nil {
		hdr.Set(backfillHeader, st.Backfill.Next.UTC().Format(time.RFC3339Nano))
	}
	if st.LastToken != 0 {
		hdr.Set(tokenHeader, strconv.FormatUint(st.LastToken, 10))
	}
	if st.Definition != "" {
		hdr.Set(definitionHeader, st.Definition)
	}
	return hdr
}

// update applies change to the job's state with compare-and-swap, retrying
// on conflicts, and returns the state written and its revision. change
// returns false to leave the state as it is (then the revision is 0). A
// caller that knows the current state and revision passes them as a first
// guess to save a read; without one the cache's is taken. A guess may be
// stale, so only a state read from the key can decide that nothing
// changes: change returning false on a guess costs a read and a retry.
func (h *History) update(ctx context.Context, name string, guess *jobState, rev uint64, change func(*jobState) bool) (jobState, uint64, error) {
	return h.updateAt(ctx, name, guess, rev, func(st *jobState, _ uint64) bool { return change(st) })
}

// updateAt is update with change also given the revision of the state it
// changes (the hold's expiry is measured per revision: see hold.go).
func (h *History) updateAt(ctx context.Context, name string, guess *jobState, rev uint64, change func(*jobState, uint64) bool) (jobState, uint64, error) {
	return h.updatePeek(ctx, name, guess, rev, nil, change)
}

// updatePeek is updateAt whose reads of the record ask settled first (see
// getPeek): it fails with errSettled, having written nothing, when the
// headers of the record it reads settle it.
func (h *History) updatePeek(ctx context.Context, name string, guess *jobState, rev uint64, settled func(nats.Header) bool, change func(*jobState, uint64) bool) (jobState, uint64, error) {
	private := false // the guess's runs are a copy of our own (the cache's)
	if guess == nil {
		if st, r, ok := h.cache.get(name); ok {
			guess, rev, private = &st, r, true
		}
	}
	for range maxCASRetries {
		st, guessed := jobState{}, guess != nil
		if guessed {
			st, guess = *guess, nil
			if !private {
				st.Runs = slices.Clone(st.Runs) // change edits runs in place
			}
		} else {
			var err error
			if st, rev, err = h.readPeek(ctx, name, settled); err != nil {
				return jobState{}, 0, err
			}
			h.cache.put(name, st, rev)
		}
		if !change(&st, rev) {
			if guessed {
				continue
			}
			return st, 0, nil
		}
		newRev, err := h.put(ctx, name, &st, rev)
		if err != nil || newRev == 0 {
			h.cache.drop(name)
		}
		if err != nil {
			return jobState{}, 0, err
		}
		if newRev != 0 {
			h.cache.put(name, st, newRev)
			return st, newRev, nil
		}
	}
	return jobState{}, 0, fmt.Errorf("history of %q: too many concurrent updates", name)
}

// Suspend marks the job suspended for every replica: from the moment
// their watch delivers it (well within a second), they start none of its
// ticks and record them as skipped. A run in progress goes on. by labels
// who suspended it. Suspending a suspended job changes nothing.
func (h *History) Suspend(ctx context.Context, name, by string, now time.Time) error {
	if err := job.ValidateName(name); err != nil {
		return err
	}
	_, _, err := h.update(ctx, name, nil, 0, func(st *jobState) bool {
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
	_, _, err := h.update(ctx, key, nil, 0, func(st *jobState) bool {
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
	_, _, err := h.update(ctx, name, nil, 0, func(st *jobState) bool {
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
