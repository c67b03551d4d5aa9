package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cronlock/cronlock/internal/kv"
	"github.com/cronlock/cronlock/job"
)

// Status of a run, as recorded in the shared history.
const (
	StatusRunning   = "running"
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
	StatusTimeout   = "timeout"
	StatusLost      = "lost"      // the lease was lost during the run
	StatusCancelled = "cancelled" // shutdown cancelled the run after ShutdownGrace
	StatusMissed    = "missed"    // ticks no replica ran; see Run.Error for how many
	StatusAbandoned = "abandoned" // the replica running it stopped without recording a result
)

// Run is one entry of a job's shared history.
type Run struct {
	Job      string    `json:"job"`
	Tick     time.Time `json:"tick"`
	Manual   bool      `json:"manual,omitempty"` // started by Trigger, not by the schedule
	Owner    string    `json:"owner,omitempty"`
	Token    uint64    `json:"token,omitempty"`
	Attempts int       `json:"attempts,omitempty"`
	Start    time.Time `json:"start,omitzero"`
	End      time.Time `json:"end,omitzero"`
	Status   string    `json:"status"`
	Error    string    `json:"error,omitempty"`
}

// Duration is End − Start, or 0 for a run that has not ended.
func (r Run) Duration() time.Duration {
	if r.End.IsZero() || r.Start.IsZero() {
		return 0
	}
	return r.End.Sub(r.Start)
}

// jobState is the shared, durable state of one job: the last tick claimed by
// any replica, and its recent runs (oldest first). It is one key of the
// history bucket, updated only with compare-and-swap.
type jobState struct {
	LastTick time.Time `json:"last_tick,omitzero"`
	Runs     []Run     `json:"runs"`
}

// History is the run history shared by every replica: per job, the last
// claimed tick and the recent runs, in a KV bucket. The scheduler writes
// it; operator commands read it with OpenHistory, without a Scheduler.
type History struct {
	bucket *kv.Bucket
	size   int
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
}

// lastTickHeader carries jobState.LastTick on every write, so replicas can
// follow claims with a headers-only watch instead of fetching whole
// histories.
const lastTickHeader = "Cronlock-Last-Tick"

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
	return &History{bucket: b, size: opts.Size}, nil
}

// Runs returns the job's recent runs, newest first.
func (h *History) Runs(ctx context.Context, name string) ([]Run, error) {
	if err := job.ValidateName(name); err != nil {
		return nil, err
	}
	st, _, err := h.get(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("scheduler: history of %q: %w", name, err)
	}
	slices.Reverse(st.Runs)
	return st.Runs, nil
}

func (h *History) get(ctx context.Context, name string) (jobState, uint64, error) {
	e, err := h.bucket.Last(ctx, name)
	if err != nil || e == nil {
		return jobState{}, 0, err
	}
	if e.Free {
		return jobState{}, e.Revision, nil
	}
	var st jobState
	if err := json.Unmarshal(e.Value, &st); err != nil {
		return jobState{}, 0, fmt.Errorf("history of %q is not a job state: %w", name, err)
	}
	return st, e.Revision, nil
}

// put writes st if the key is still at rev (0: the key must not exist) and
// returns the new revision, or 0 on a lost compare-and-swap.
func (h *History) put(ctx context.Context, name string, st *jobState, rev uint64) (uint64, error) {
	if over := len(st.Runs) - h.size; over > 0 {
		st.Runs = st.Runs[over:]
	}
	data, err := json.Marshal(st)
	if err != nil {
		return 0, err
	}
	hdr := nats.Header{}
	if !st.LastTick.IsZero() {
		hdr.Set(lastTickHeader, st.LastTick.UTC().Format(time.RFC3339Nano))
	}
	newRev, err := h.bucket.Put(ctx, kv.Write{Key: name, Value: data, Header: hdr, Expected: rev})
	if kv.IsConflict(err) {
		return 0, nil
	}
	return newRev, err
}

// update applies change to the job's state with compare-and-swap, retrying
// on conflicts, and returns the state written and its revision. change
// returns false to leave the state as it is (then the revision is 0). A
// caller that knows the current state and revision passes them as a first
// guess to save a read.
func (h *History) update(ctx context.Context, name string, guess *jobState, rev uint64, change func(*jobState) bool) (jobState, uint64, error) {
	for range maxCASRetries {
		var st jobState
		if guess != nil {
			st, guess = *guess, nil
			st.Runs = slices.Clone(st.Runs)
		} else {
			var err error
			if st, rev, err = h.get(ctx, name); err != nil {
				return jobState{}, 0, err
			}
		}
		if !change(&st) {
			return st, 0, nil
		}
		newRev, err := h.put(ctx, name, &st, rev)
		if err != nil {
			return jobState{}, 0, err
		}
		if newRev != 0 {
			return st, newRev, nil
		}
	}
	return jobState{}, 0, fmt.Errorf("history of %q: too many concurrent updates", name)
}

// claimed is the outcome of a claim.
type claimed struct {
	ok bool // false: the tick or a later one was claimed already
	// missed counts the ticks between the previous claim and this one that
	// no replica ran (recorded as one missed entry).
	missed int
	// highest is the highest fencing token in the history before this run:
	// a lease token at or below it means the lock stream went back in time
	// (NATS lost writes it had acknowledged), which the caller reports.
	highest uint64
	// st and rev are the state written and its revision, for record.
	st  jobState
	rev uint64
}

// claim records tick as the job's last claimed tick and run as running,
// unless that tick or a later one was claimed already. Ticks between the
// previous claim and this one, which no replica ran, are recorded as one
// missed entry; runs left "running" by a replica that stopped are marked
// abandoned (the caller holds the job's lock, so no other run of the job is
// in progress).
func (h *History) claim(ctx context.Context, sched job.Schedule, run Run) (claimed, error) {
	var c claimed
	st, rev, err := h.update(ctx, run.Job, nil, 0, func(st *jobState) bool {
		if !st.LastTick.IsZero() && !run.Tick.After(st.LastTick) {
			return false
		}
		c.highest = 0
		for _, r := range st.Runs {
			c.highest = max(c.highest, r.Token)
		}
		c.missed = 0
		if !st.LastTick.IsZero() {
			var first, last time.Time
			c.missed, first, last = between(sched, st.LastTick, run.Tick)
			if c.missed > 0 {
				st.Runs = append(st.Runs, Run{Job: run.Job, Tick: first, Status: StatusMissed,
					Error: fmt.Sprintf("%d tick(s) from %s to %s ran on no replica", c.missed, first.UTC().Format(time.RFC3339), last.UTC().Format(time.RFC3339))})
			}
		}
		markAbandoned(st.Runs)
		st.LastTick = run.Tick
		st.Runs = append(st.Runs, run)
		return true
	})
	c.ok, c.st, c.rev = rev != 0, st, rev
	return c, err
}

// markAbandoned marks runs still "running" as abandoned.
func markAbandoned(runs []Run) {
	for i := range runs {
		if runs[i].Status == StatusRunning {
			runs[i].Status = StatusAbandoned
			runs[i].Error = "the replica running it stopped without recording a result"
		}
	}
}

// record inserts or replaces run (matched by tick and token) in the history.
// guess and rev, if known (from claim), save a read when nothing else wrote
// since.
func (h *History) record(ctx context.Context, run Run, guess *jobState, rev uint64) error {
	_, _, err := h.update(ctx, run.Job, guess, rev, func(st *jobState) bool {
		i := slices.IndexFunc(st.Runs, func(r Run) bool { return r.Tick.Equal(run.Tick) && r.Token == run.Token })
		if i >= 0 {
			st.Runs[i] = run
		} else {
			st.Runs = append(st.Runs, run)
		}
		return true
	})
	return err
}

// maxCount bounds the walk over missed ticks: an every-second job down for
// a day is 86,400 steps, well within it.
const maxCount = 1_000_000

// between counts the ticks strictly between after and before.
func between(sched job.Schedule, after, before time.Time) (n int, first, last time.Time) {
	for t := sched.Next(after); !t.IsZero() && t.Before(before) && n < maxCount; t = sched.Next(t) {
		if n == 0 {
			first = t
		}
		last = t
		n++
	}
	return n, first, last
}

// latest returns the last tick of sched after `after` and at or before now,
// or the zero time if there is none.
func latest(sched job.Schedule, after, now time.Time) time.Time {
	var out time.Time
	n := 0
	for t := sched.Next(after); !t.IsZero() && !t.After(now) && n < maxCount; t = sched.Next(t) {
		out = t
		n++
	}
	return out
}
