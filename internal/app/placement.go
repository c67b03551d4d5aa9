package app

import (
	"context"
	"slices"
	"time"

	"github.com/cronlock/cronlock/internal/config"
	"github.com/cronlock/cronlock/scheduler"
)

// everyReplica is the run_on value that runs a job on each replica.
const everyReplica = "every_replica"

// RunsOnEveryReplica reports whether the configured job runs each tick on
// every replica (run_on: every_replica): its runs are in a record per
// replica (scheduler.ReplicaRecord), which its views merge.
func RunsOnEveryReplica(cj config.Job) bool { return cj.RunOn == everyReplica }

// sharedState reads a job's shared state: for an every_replica job,
// merged over every replica's record, one entry per replica for each tick.
func sharedState(ctx context.Context, h *scheduler.History, everyReplica bool, name string) (scheduler.JobState, error) {
	if everyReplica {
		return h.MergedState(ctx, name)
	}
	return h.State(ctx, name)
}

// cancelRuns cancels the job's running run, or, for an every_replica job,
// the running run of each replica (of o.Tick, if set).
func cancelRuns(ctx context.Context, h *scheduler.History, name string, everyReplica bool, o scheduler.CancelOptions) ([]scheduler.Run, error) {
	if everyReplica {
		return h.CancelReplicas(ctx, name, o)
	}
	run, err := h.Cancel(ctx, name, o)
	if err != nil {
		return nil, err
	}
	return []scheduler.Run{run}, nil
}

// CancelAll is Cancel that, for an every_replica job, cancels the running
// run of every replica (of tick, if not zero) and returns them all; for
// another job, the one run Cancel returns.
func (c *Client) CancelAll(ctx context.Context, name string, tick time.Time, by string) ([]scheduler.Run, error) {
	cj, _, err := c.findJob(name)
	if err != nil {
		return nil, err
	}
	h, err := c.history(ctx)
	if err != nil {
		return nil, err
	}
	return cancelRuns(ctx, h, name, RunsOnEveryReplica(cj), scheduler.CancelOptions{By: by, Tick: tick})
}

// runningOnReplicas reports whether an every_replica job's merged runs
// have one in progress (on any replica).
func runningOnReplicas(runs []scheduler.Run) bool {
	return slices.ContainsFunc(runs, func(r scheduler.Run) bool { return r.Status == scheduler.StatusRunning })
}
