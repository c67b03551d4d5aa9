// Command runcontrol shows the scheduler's run control from Go, with two
// replicas of one worker on one NATS server:
//
//   - a concurrency group: two backup jobs due at the same second never run
//     at once across the replicas (job.Group), the second waits for the
//     first within its starting deadline;
//
//   - overlap allow: a job slower than its schedule runs up to MaxParallel
//     ticks at once, each tick still once;
//
//   - cancel: History.Cancel stops a run wherever it runs, and it is
//     recorded cancelled by whoever asked;
//
//   - backfill: History.Backfill runs the ticks that a suspension skipped.
//
//     go run ./examples/runcontrol -embedded
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/examples/internal/exnats"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/lock"
	"github.com/cronlock/cronlock/scheduler"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "runcontrol:", err)
		os.Exit(1)
	}
}

// board records what the jobs did, across the replicas.
type board struct {
	mu          sync.Mutex
	backupsNow  int // backup runs in progress
	backupsMost int
	backups     int
	thumbsNow   int
	thumbsMost  int
}

func (b *board) enter(now, most *int) func() {
	b.mu.Lock()
	*now++
	*most = max(*most, *now)
	b.mu.Unlock()
	return func() { b.mu.Lock(); *now--; b.mu.Unlock() }
}

// jobs are the worker's jobs; every replica registers the same.
func (b *board) jobs() []job.Job {
	backups := job.Group{Name: "backups", MaxRunning: 1}
	backup := func(ctx context.Context) error {
		defer b.enter(&b.backupsNow, &b.backupsMost)()
		b.mu.Lock()
		b.backups++
		b.mu.Unlock()
		return sleep(ctx, 400*time.Millisecond)
	}
	return []job.Job{
		{Name: "backup.db", Schedule: "*/2 * * * * *", Group: backups, StartingDeadline: 2 * time.Second, Run: backup},
		{Name: "backup.files", Schedule: "*/2 * * * * *", Group: backups, StartingDeadline: 2 * time.Second, Run: backup},
		{Name: "thumbnails", Schedule: "* * * * * *", Overlap: job.OverlapAllow, MaxParallel: 2, Run: func(ctx context.Context) error {
			defer b.enter(&b.thumbsNow, &b.thumbsMost)()
			return sleep(ctx, 1500*time.Millisecond)
		}},
		{Name: "reindex", Schedule: "* * * * * *", Run: func(ctx context.Context) error { return sleep(ctx, time.Minute) }},
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run starts two replicas, plays the scenes and returns an error if one
// does not turn out as the package comment says.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("runcontrol", flag.ContinueOnError)
	fs.SetOutput(stdout)
	natsURL := fs.String("nats", nats.DefaultURL, "NATS server URL")
	embedded := fs.Bool("embedded", false, "start an in-process nats-server with JetStream instead (no setup)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	log := zerolog.New(zerolog.ConsoleWriter{Out: stdout, TimeFormat: time.TimeOnly, NoColor: true}).With().Timestamp().Logger()
	n, err := exnats.Start(*natsURL, *embedded)
	if err != nil {
		return err
	}
	defer n.Close()
	b := &board{}
	var js jetstream.JetStream
	ctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop()
	for _, name := range []string{"replica-a", "replica-b"} {
		nc, rjs, err := n.Connect(name)
		if err != nil {
			return err
		}
		defer nc.Close()
		js = rjs
		s, err := newReplica(ctx, rjs, name, log, b)
		if err != nil {
			return err
		}
		wg.Go(func() { _ = s.Run(ctx) })
	}
	h, err := scheduler.OpenHistory(ctx, js, scheduler.HistoryOptions{})
	if err != nil {
		return err
	}
	return scenes(ctx, h, b, log)
}

func newReplica(ctx context.Context, js jetstream.JetStream, name string, log zerolog.Logger, b *board) (*scheduler.Scheduler, error) {
	l, err := lock.New(ctx, js, lock.Options{OwnerID: name, LeaseDuration: 2 * time.Second, RenewInterval: 500 * time.Millisecond})
	if err != nil {
		return nil, err
	}
	context.AfterFunc(ctx, func() { l.Close() })
	s, err := scheduler.New(ctx, js, l, scheduler.Options{Logger: log.With().Str("replica", name).Logger().Level(zerolog.WarnLevel),
		ShutdownGrace: time.Second})
	if err != nil {
		return nil, err
	}
	for _, j := range b.jobs() {
		if err := s.Add(j); err != nil {
			return nil, err
		}
	}
	return s, nil
}
