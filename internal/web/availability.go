package web

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// retryAfter is the Retry-After of a 503: the page polls every second
// anyway, and start-up stages last about that long or more.
const retryAfter = "1"

// watched is a Source that logs when it becomes unavailable (with the
// reason it first gave) and when it answers again, so that a page left
// open during a long start-up, polling every second, logs one line per
// change of state instead of one per request. The stages of start-up are
// the daemon's to log.
type watched struct {
	Source
	log zerolog.Logger

	mu   sync.Mutex
	down bool
}

// note records the outcome of a call and logs a change of state; errors
// other than ErrUnavailable say nothing about it (a failed KV read is
// logged by the handler).
func (w *watched) note(err error) {
	up := err == nil || errors.Is(err, ErrNotFound)
	if !up && !errors.Is(err, ErrUnavailable) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if up != w.down {
		return
	}
	w.down = !up
	if up {
		w.log.Info().Msg("status page: available")
	} else {
		w.log.Info().Str("reason", err.Error()).Msg("status page: unavailable (503) until cronlock is ready")
	}
}

func (w *watched) Jobs(ctx context.Context, q JobQuery) (JobList, error) {
	v, err := w.Source.Jobs(ctx, q)
	w.note(err)
	return v, err
}

func (w *watched) Job(ctx context.Context, name string) (JobDetail, error) {
	v, err := w.Source.Job(ctx, name)
	w.note(err)
	return v, err
}

func (w *watched) Replicas(ctx context.Context) ([]Replica, error) {
	v, err := w.Source.Replicas(ctx)
	w.note(err)
	return v, err
}

func (w *watched) Trigger(ctx context.Context, name string) error {
	err := w.Source.Trigger(ctx, name)
	w.note(err)
	return err
}

func (w *watched) Suspend(ctx context.Context, name string) error {
	err := w.Source.Suspend(ctx, name)
	w.note(err)
	return err
}

func (w *watched) Resume(ctx context.Context, name string) error {
	err := w.Source.Resume(ctx, name)
	w.note(err)
	return err
}

func (w *watched) Backfill(ctx context.Context, name string, from, to time.Time, by string, dryRun bool) ([]time.Time, error) {
	ticks, err := w.Source.Backfill(ctx, name, from, to, by, dryRun)
	w.note(err)
	return ticks, err
}

func (w *watched) Cancel(ctx context.Context, name string) error {
	err := w.Source.Cancel(ctx, name)
	w.note(err)
	return err
}
