package app

import (
	"context"
	"time"

	"github.com/cronlock/cronlock/scheduler"
)

// Backfill starts (or, with dryRun, only lists) a backfill of the job over
// [from, to] with the job's schedule (see scheduler.History.Backfill) and
// returns the ticks it runs. Errors match ErrNoJob for an unknown job,
// scheduler.ErrBackfillRange and scheduler.ErrBackfillRunning.
func (c *Client) Backfill(ctx context.Context, name string, from, to time.Time, by string, dryRun bool) ([]time.Time, error) {
	cj, _, err := c.findJob(name)
	if err != nil {
		return nil, err
	}
	sched, err := cj.Timing().ParsedSchedule()
	if err != nil {
		return nil, err
	}
	h, err := c.history(ctx)
	if err != nil {
		return nil, err
	}
	return h.Backfill(ctx, name, scheduler.BackfillOptions{From: from, To: to, Schedule: sched, By: by, DryRun: dryRun})
}

// CancelBackfill stops the job's backfill (see
// scheduler.History.CancelBackfill).
func (c *Client) CancelBackfill(ctx context.Context, name, by string) (scheduler.Backfill, error) {
	if _, _, err := c.findJob(name); err != nil {
		return scheduler.Backfill{}, err
	}
	h, err := c.history(ctx)
	if err != nil {
		return scheduler.Backfill{}, err
	}
	return h.CancelBackfill(ctx, name, by)
}
