package app

import (
	"context"
	"time"

	"github.com/cronlock/cronlock/internal/config"
	"github.com/cronlock/cronlock/scheduler"
)

// cancelWaitMargin is how long, beyond a job's grace, Cancel's callers
// wait for the cancelled run's result: the watch delivery, the SIGTERM,
// the result's write.
const cancelWaitMargin = 10 * time.Second

// Cancel asks the job's running run (of tick, if not zero) to stop,
// wherever it runs, and returns it (see scheduler.History.Cancel). Errors
// match ErrNoJob for a job neither the configuration nor the runtime jobs
// define, and scheduler.ErrNotRunning when it runs nothing.
func (c *Client) Cancel(ctx context.Context, name string, tick time.Time, by string) (scheduler.Run, error) {
	if _, _, err := c.findJob(name); err != nil {
		return scheduler.Run{}, err
	}
	h, err := c.history(ctx)
	if err != nil {
		return scheduler.Run{}, err
	}
	return h.Cancel(ctx, name, scheduler.CancelOptions{By: by, Tick: tick})
}

// AwaitCancelled waits for the result of a run Cancel returned, at most
// the job's grace and cancelWaitMargin, and returns it as recorded.
func (c *Client) AwaitCancelled(ctx context.Context, run scheduler.Run) (scheduler.Run, error) {
	name, _ := scheduler.RecordJob(run.Job) // an every_replica run's Job is its record's key
	cj, _, _ := c.findJob(name)
	grace := time.Duration(cj.Grace)
	if grace <= 0 {
		grace = time.Duration(config.DefaultJobGrace)
	}
	ctx, cancel := context.WithTimeout(ctx, grace+cancelWaitMargin)
	defer cancel()
	return c.AwaitRun(ctx, run)
}
