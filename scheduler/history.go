package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/lock"
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

// history stores jobState values in a KV bucket.
type history struct {
	js          jetstream.JetStream
	kv          jetstream.KeyValue
	stream      jetstream.Stream
	prefix      string // "$KV.<bucket>.": stored subjects, for the claims watch
	writePrefix string // lock.KVWritePrefix: subjects to write to
	size        int
}

// lastTickHeader carries jobState.LastTick on every write, so replicas can
// follow claims with a headers-only watch instead of fetching whole
// histories.
const lastTickHeader = "Cronlock-Last-Tick"

// maxCASRetries bounds read-modify-write loops on one key. Only replicas
// finishing, catching up or recording runs of the same job contend, so a
// few rounds always suffice; more means something is wrong.
const maxCASRetries = 8

func openHistory(ctx context.Context, js jetstream.JetStream, bucket string, replicas, size int) (*history, error) {
	kv, err := js.KeyValue(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:      bucket,
			Description: "cronlock: last claimed tick and recent runs per job",
			History:     1,
			Replicas:    replicas,
			Storage:     jetstream.FileStorage,
		})
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = js.KeyValue(ctx, bucket)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("scheduler: history bucket %q: %w", bucket, err)
	}
	stream, err := js.Stream(ctx, "KV_"+bucket)
	if err != nil {
		return nil, fmt.Errorf("scheduler: history bucket %q: %w", bucket, err)
	}
	return &history{js: js, kv: kv, stream: stream, prefix: "$KV." + bucket + ".", writePrefix: lock.KVWritePrefix(js, bucket), size: size}, nil
}

func (h *history) get(ctx context.Context, name string) (jobState, uint64, error) {
	e, err := h.kv.Get(ctx, name)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return jobState{}, 0, nil
	}
	if err != nil {
		return jobState{}, 0, err
	}
	var st jobState
	if err := json.Unmarshal(e.Value(), &st); err != nil {
		return jobState{}, 0, fmt.Errorf("history of %q is not a job state: %w", name, err)
	}
	return st, e.Revision(), nil
}

// put writes st if the key is still at rev (0: the key must not exist) and
// returns the new revision, or 0 on a lost compare-and-swap.
func (h *history) put(ctx context.Context, name string, st *jobState, rev uint64) (uint64, error) {
	if over := len(st.Runs) - h.size; over > 0 {
		st.Runs = st.Runs[over:]
	}
	data, err := json.Marshal(st)
	if err != nil {
		return 0, err
	}
	m := &nats.Msg{Subject: h.writePrefix + name, Data: data, Header: nats.Header{}}
	if !st.LastTick.IsZero() {
		m.Header.Set(lastTickHeader, st.LastTick.UTC().Format(time.RFC3339Nano))
	}
	ack, err := h.js.PublishMsg(ctx, m, jetstream.WithExpectLastSequencePerSubject(rev))
	if isConflict(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// isConflict reports a failed compare-and-swap; replicated streams report it
// as 10164 rather than 10071.
func isConflict(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// update applies change to the job's state with compare-and-swap, retrying
// on conflicts, and returns the state written and its revision. change
// returns false to leave the state as it is (then the revision is 0). A
// caller that knows the current state and revision passes them as a first
// guess to save a read.
func (h *history) update(ctx context.Context, name string, guess *jobState, rev uint64, change func(*jobState) bool) (jobState, uint64, error) {
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

// claim records tick as the job's last claimed tick and run as running,
// unless that tick or a later one was claimed already (then claimed is
// false). Ticks between the previous claim and this one, which no replica
// ran, are recorded as one missed entry and counted; runs left "running" by
// a replica that stopped are marked abandoned (the caller holds the job's
// lock, so no other run of the job is in progress). It returns the state
// written and its revision, for record.
//
// highest is the highest fencing token in the history before this run: a
// lease token at or below it means the lock stream went back in time (NATS
// lost writes it had acknowledged), which the caller reports.
func (h *history) claim(ctx context.Context, sched job.Schedule, run Run) (claimed bool, missed int, highest uint64, st jobState, rev uint64, err error) {
	st, rev, err = h.update(ctx, run.Job, nil, 0, func(st *jobState) bool {
		if !st.LastTick.IsZero() && !run.Tick.After(st.LastTick) {
			return false
		}
		highest = 0
		for _, r := range st.Runs {
			highest = max(highest, r.Token)
		}
		missed = 0
		if !st.LastTick.IsZero() {
			var first, last time.Time
			missed, first, last = between(sched, st.LastTick, run.Tick)
			if missed > 0 {
				st.Runs = append(st.Runs, Run{Job: run.Job, Tick: first, Status: StatusMissed,
					Error: fmt.Sprintf("%d tick(s) from %s to %s ran on no replica", missed, first.UTC().Format(time.RFC3339), last.UTC().Format(time.RFC3339))})
			}
		}
		for i := range st.Runs {
			if st.Runs[i].Status == StatusRunning {
				st.Runs[i].Status = StatusAbandoned
				st.Runs[i].Error = "the replica running it stopped without recording a result"
			}
		}
		st.LastTick = run.Tick
		st.Runs = append(st.Runs, run)
		return true
	})
	return rev != 0, missed, highest, st, rev, err
}

// record inserts or replaces run (matched by tick and token) in the history.
// guess and rev, if known (from claim), save a read when nothing else wrote
// since.
func (h *history) record(ctx context.Context, run Run, guess *jobState, rev uint64) error {
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
