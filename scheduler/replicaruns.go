package scheduler

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/cronlock/cronlock/job"
)

// ReplicaRuns returns the recent runs of an every_replica job
// (job.RunOnEveryReplica) from the records of every replica that ran it
// (ReplicaRecord), merged newest first: one entry per replica for each
// tick, each with its Owner, and Job the job's own name. A replica that
// left keeps its entries. Nil when no replica has run it so.
func (h *History) ReplicaRuns(ctx context.Context, name string) ([]Run, error) {
	if err := job.ValidateName(name); err != nil {
		return nil, err
	}
	keys, err := h.replicaRecords(ctx, name)
	if err != nil {
		return nil, err
	}
	var out []Run
	for _, k := range keys {
		st, _, err := h.get(ctx, k)
		if err != nil {
			return nil, fmt.Errorf("scheduler: history: %w", err)
		}
		for _, r := range st.Runs {
			r.Job = name
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b Run) int {
		if c := b.Tick.Compare(a.Tick); c != 0 {
			return c
		}
		return strings.Compare(a.Owner, b.Owner)
	})
	return out, nil
}

// replicaRecords returns the keys of the job's every_replica records,
// sorted: one filtered listing, not a scan of every job's keys.
func (h *History) replicaRecords(ctx context.Context, name string) ([]string, error) {
	lister, err := h.bucket.KeyValue().ListKeysFiltered(ctx, name+replicaRecordSep+"*")
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

// ReplicaRuns is History.ReplicaRuns on the scheduler's history.
func (s *Scheduler) ReplicaRuns(ctx context.Context, name string) ([]Run, error) {
	return s.history.ReplicaRuns(ctx, name)
}
