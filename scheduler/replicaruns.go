package scheduler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cronlock/cronlock/internal/history"
	"github.com/cronlock/cronlock/job"
)

// ReplicaRuns returns the recent runs of an every_replica job
// (job.RunOnEveryReplica) from the records of every replica that ran it
// (ReplicaRecord), merged newest first: one entry per replica for each
// tick, each with its Owner. Each entry's Job is its record's key, which
// Output, AwaitRun and Cancel take; RecordJob gives the job's name. A
// replica that left keeps its entries. Nil when no replica has run it so.
func (h *History) ReplicaRuns(ctx context.Context, name string) ([]Run, error) {
	keys, err := h.ReplicaRecords(ctx, name)
	if err != nil {
		return nil, err
	}
	var out []Run
	for _, k := range keys {
		st, _, err := h.get(ctx, k)
		if err != nil {
			return nil, fmt.Errorf("scheduler: history: %w", err)
		}
		slices.Reverse(st.Runs) // newest first, as State's
		out = append(out, st.Runs...)
	}
	SortRuns(out)
	return out, nil
}

// SortRuns sorts runs newest first: by tick, then by owner, keeping the
// order of one owner's entries of a tick.
func SortRuns(runs []Run) {
	slices.SortStableFunc(runs, func(a, b Run) int {
		if c := b.Tick.Compare(a.Tick); c != 0 {
			return c
		}
		return strings.Compare(a.Owner, b.Owner)
	})
}

// ReplicaRecords returns the keys of the every_replica records of job
// name (ReplicaRecord), sorted: one listing filtered by the key's form,
// not a scan of every job's keys.
func (h *History) ReplicaRecords(ctx context.Context, name string) ([]string, error) {
	if err := job.ValidateName(name); err != nil {
		return nil, err
	}
	lister, err := h.store.Bucket().KeyValue().ListKeysFiltered(ctx, name+replicaRecordSep+"*")
	if err != nil {
		return nil, fmt.Errorf("scheduler: history: %w", err)
	}
	var keys []string
	for k := range lister.Keys() {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys, nil
}

// MergedState is State of an every_replica job: the job's own record (its
// suspension, and the runs from before it ran on every replica) with the
// runs of every replica's record merged in, newest first (as
// ReplicaRuns). Holder is the job's own record's, nil while it runs on
// every replica; Suspended is the job's own, else the first of a
// replica's record (suspend_after_failures suspends that replica's runs
// alone), its note naming the replica.
func (h *History) MergedState(ctx context.Context, name string) (JobState, error) {
	st, err := h.State(ctx, name)
	if err != nil {
		return st, err
	}
	keys, err := h.ReplicaRecords(ctx, name)
	if err != nil {
		return st, err
	}
	for _, k := range keys {
		rs, _, err := h.get(ctx, k)
		if err != nil {
			return st, fmt.Errorf("scheduler: history: %w", err)
		}
		slices.Reverse(rs.Runs) // newest first, as State's
		st.Runs = append(st.Runs, rs.Runs...)
		if st.Suspended == nil && rs.Suspended != nil {
			sp := *rs.Suspended
			sp.Note = strings.TrimSpace("on replica " + replicaOf(rs) + ": " + sp.Note)
			st.Suspended = &sp
		}
	}
	SortRuns(st.Runs)
	return st, nil
}

// replicaOf is the owner of an every_replica record's runs.
func replicaOf(st history.Record) string {
	for _, r := range st.Runs {
		if r.Owner != "" {
			return r.Owner
		}
	}
	return "?"
}

// CancelReplicas is Cancel of an every_replica job: it asks every
// replica's running run of the job (of o.Tick, if set) to stop and returns
// them, or an error matching ErrNotRunning when none runs.
func (h *History) CancelReplicas(ctx context.Context, name string, o CancelOptions) ([]Run, error) {
	keys, err := h.ReplicaRecords(ctx, name)
	if err != nil {
		return nil, err
	}
	var out []Run
	for _, k := range keys {
		run, err := h.Cancel(ctx, k, o)
		switch {
		case err == nil:
			out = append(out, run)
		case !errors.Is(err, ErrNotRunning):
			return out, err
		}
	}
	if len(out) == 0 {
		if !o.Tick.IsZero() {
			return nil, fmt.Errorf("job %q: %w on any replica at tick %s", name, ErrNotRunning, o.Tick.UTC().Format(time.RFC3339))
		}
		return nil, fmt.Errorf("job %q: %w on any replica", name, ErrNotRunning)
	}
	return out, nil
}

// ValidateRecord reports whether key can be a job's record, whose key is
// its lock's: a job's name (job.ValidateName) or an every_replica
// record's key (ReplicaRecord).
func ValidateRecord(key string) error {
	name, rest, ok := strings.Cut(key, replicaRecordSep)
	if err := job.ValidateName(name); err != nil || !ok {
		return err
	}
	if rest == "" || strings.IndexFunc(rest, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_' || r == '-')
	}) >= 0 {
		return fmt.Errorf("record %q: not a job name, nor <job>%s<replica key>", key, replicaRecordSep)
	}
	return nil
}

// ReplicaRuns is History.ReplicaRuns on the scheduler's history.
func (s *Scheduler) ReplicaRuns(ctx context.Context, name string) ([]Run, error) {
	return s.history.ReplicaRuns(ctx, name)
}

// resumeReplicas lifts the suspensions of the job's every_replica records
// (suspend_after_failures suspends a replica's record: its failures in a
// row are its own).
func (h *History) resumeReplicas(ctx context.Context, name string) error {
	keys, err := h.ReplicaRecords(ctx, name)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := h.resume(ctx, k); err != nil {
			return err
		}
	}
	return nil
}
