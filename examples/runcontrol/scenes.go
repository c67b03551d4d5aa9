package main

import (
	"context"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/scheduler"
)

// scenes plays the scenes against the running replicas.
func scenes(ctx context.Context, h *scheduler.History, b *board, log zerolog.Logger) error {
	// 1 and 2: the group and overlap allow, watched for a few seconds.
	if err := sleep(ctx, 3*time.Second); err != nil {
		return err
	}
	b.mu.Lock()
	most, backups, thumbs := b.backupsMost, b.backups, b.thumbsMost
	b.mu.Unlock()
	log.Info().Int("backup_runs", backups).Int("at_once", most).Msg("scene 1: the backups group")
	if most != 1 || backups < 2 {
		return fmt.Errorf("scene 1: %d backup runs, %d at once; want both jobs run, one at a time", backups, most)
	}
	log.Info().Int("at_once", thumbs).Msg("scene 2: thumbnails under overlap allow, max_parallel 2")
	if thumbs != 2 {
		return fmt.Errorf("scene 2: %d thumbnail runs at once, want 2", thumbs)
	}

	// 3: cancel the minute-long reindex run, wherever it runs.
	run, err := h.Cancel(ctx, "reindex", scheduler.CancelOptions{By: "example"})
	if err != nil {
		return fmt.Errorf("scene 3: %w", err)
	}
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	got, err := h.AwaitRun(actx, run)
	if err != nil || got.Status != scheduler.StatusCancelled {
		return fmt.Errorf("scene 3: the cancelled run: %s, %v", got.Status, err)
	}
	log.Info().Str("on", got.Owner).Str("by", got.By).Msg("scene 3: reindex cancelled")

	// 4: suspend thumbnails for two ticks, then backfill them.
	return backfillScene(ctx, h, log)
}

func backfillScene(ctx context.Context, h *scheduler.History, log zerolog.Logger) error {
	if err := h.Suspend(ctx, "thumbnails", "example", time.Now()); err != nil {
		return err
	}
	from := time.Now().Truncate(time.Second).Add(time.Second)
	if err := sleep(ctx, time.Until(from.Add(2500*time.Millisecond))); err != nil {
		return err
	}
	if err := h.Resume(ctx, "thumbnails"); err != nil {
		return err
	}
	sched, err := job.ParseSchedule("* * * * * *", time.UTC)
	if err != nil {
		return err
	}
	to := from.Add(time.Second)
	var ticks []time.Time
	for deadline := time.Now().Add(3 * time.Second); ; {
		ticks, err = h.Backfill(ctx, "thumbnails", scheduler.BackfillOptions{From: from, To: to, Schedule: sched, By: "example"})
		if err == nil || time.Now().After(deadline) {
			break // before the first tick after the resume is claimed, to is after the last claimed tick
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
	if err != nil || len(ticks) != 2 {
		return fmt.Errorf("scene 4: backfill: %v ticks, %v; want the 2 skipped", ticks, err)
	}
	log.Info().Int("ticks", len(ticks)).Msg("scene 4: backfilling the ticks a suspension skipped")
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		st, err := h.State(ctx, "thumbnails")
		if err == nil && st.Backfill == nil {
			log.Info().Msg("scene 4: backfill done; done")
			return nil
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("scene 4: the backfill did not finish")
}
