// Command worker is a background worker that embeds cronlock as a library:
// every replica of it runs the same cron jobs, and each tick of each job runs
// on exactly one replica, the one that takes the job's lock in NATS JetStream.
//
// It is the Go shape of a .NET BackgroundService that waits for the next cron
// occurrence, tries a distributed lock for 500 ms and runs the task if it got
// it: here scheduler.Scheduler does the waiting, locking, renewing and
// releasing, and also records each run in a history shared by the replicas,
// so a tick is never run twice even by a replica whose clock is late.
//
// Try it with no setup (an in-process NATS server):
//
//	go run ./examples/worker -embedded
//
// or start two replicas against one JetStream server and watch them share
// the ticks (the second needs another HTTP port):
//
//	nats-server -js &
//	go run ./examples/worker &
//	go run ./examples/worker -http 127.0.0.1:9091
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	rungroup "github.com/oklog/run"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/examples/internal/exnats"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/lock"
	"github.com/cronlock/cronlock/scheduler"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

// run runs the worker until SIGINT, SIGTERM or the end of ctx, and returns
// nil after a clean shutdown.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(stdout)
	natsURL := fs.String("nats", nats.DefaultURL, "NATS server URL; several separated by commas")
	embedded := fs.Bool("embedded", false, "start an in-process nats-server with JetStream instead (no setup)")
	httpAddr := fs.String("http", "127.0.0.1:8736", "listen address of the /metrics server")
	reportSpec := fs.String("report-schedule", "*/10 * * * * *", "cron spec of the report job (6 fields: seconds first)")
	grace := fs.Duration("shutdown-grace", 30*time.Second, "how long a shutdown waits for running jobs before cancelling them")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	log := newLogger(stdout)

	n, err := exnats.Start(*natsURL, *embedded)
	if err != nil {
		return err
	}
	defer n.Close() // deferred first, so it runs last: after the connection is closed
	nc, js, err := n.Connect("cronlock-worker")
	if err != nil {
		return err
	}
	defer nc.Close()
	log.Info().Stringer("nats", n).Msg("connected")

	// One Locker per process. The defaults (20 s lease renewed every 10 s,
	// bucket "locks") are the reference design's.
	locker, err := lock.New(ctx, js, lock.Options{Logger: log})
	if err != nil {
		return err
	}
	defer locker.Close()

	reg := prometheus.NewRegistry()
	for _, c := range []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	// At each tick the scheduler tries the job's lock for up to 500 ms (a
	// replica that does not get it skips the tick), renews it while the job
	// runs, releases it after; it registers the cronlock_* metrics in reg.
	sched, err := scheduler.New(ctx, js, locker, scheduler.Options{Logger: log, Registerer: reg, ShutdownGrace: *grace})
	if err != nil {
		return err
	}
	for _, j := range []job.Job{{
		// The lock key is the job's name: every replica must use the same.
		Name:     "reports.generate",
		Schedule: *reportSpec,
		Run:      generateReport(log),
		// A run that overruns is cancelled through its context; the lock
		// is released when Run returns.
		Timeout: 8 * time.Second,
	}, {
		Name: "cache.refresh",
		// @every ticks at multiples of the interval since the Unix epoch,
		// so every replica computes the same ticks whenever it started.
		Schedule: "@every 1m",
		Run:      refreshCache(log),
		Retries:  2, RetryBackoff: time.Second, // retried under the same lock, same tick
	}} {
		if err := sched.Add(j); err != nil {
			return err
		}
	}

	// Listen before starting the group, so that a busy port is an error
	// here and the log shows the real address (with port 0 too).
	ln, err := net.Listen("tcp", *httpAddr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	log.Info().Str("addr", ln.Addr().String()).Msg("serving /metrics")

	// Three actors; when one returns, the group interrupts the others and
	// waits for all of them.
	var g rungroup.Group
	{
		ctx, cancel := context.WithCancel(ctx)
		g.Add(func() error {
			// Returns after a shutdown that waited up to ShutdownGrace for
			// running jobs and released their locks.
			return sched.Run(ctx)
		}, func(error) {
			cancel()
		})
	}
	g.Add(func() error {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}, func(error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx) // Serve returns at once either way
	})
	g.Add(rungroup.SignalHandler(ctx, os.Interrupt, syscall.SIGTERM))

	// The first actor to return decides the group's error: a signal, the
	// end of ctx (the scheduler returns nil then), or a real failure.
	if err := g.Run(); err != nil && !errors.Is(err, rungroup.ErrSignal) && ctx.Err() == nil {
		return err
	}
	log.Info().Msg("stopped: jobs finished and locks released")
	return nil
}

// generateReport is a job body. Run's context carries a job.RunInfo and is
// cancelled when the run must stop: Timeout, shutdown after the grace, or the
// lease lost (then another replica may already be running the job).
func generateReport(log zerolog.Logger) func(context.Context) error {
	return func(ctx context.Context) error {
		info, _ := job.FromContext(ctx)
		log.Info().
			Str("job", info.Job).
			Time("tick", info.Tick). // the scheduled instant, same on every replica
			Int("attempt", info.Attempt).
			Uint64("token", info.Token). // fencing token: pass it to downstream writes
			Msg("generating report")
		select {
		case <-time.After(200 * time.Millisecond): // the work
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// refreshCache shows the idempotency key a tick gives: a job retried, or run
// again after a lost lease, can recognise work already done for this tick.
func refreshCache(log zerolog.Logger) func(context.Context) error {
	return func(ctx context.Context) error {
		info, _ := job.FromContext(ctx)
		key := fmt.Sprintf("%s@%d", info.Job, info.Tick.Unix())
		log.Info().Str("idempotency_key", key).Uint64("token", info.Token).Msg("refreshing cache")
		return ctx.Err()
	}
}

// newLogger writes human-readable logs to w, in colour only on a terminal.
func newLogger(w io.Writer) zerolog.Logger {
	color := false
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil {
			color = st.Mode()&os.ModeCharDevice != 0
		}
	}
	return zerolog.New(zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly, NoColor: !color}).
		With().Timestamp().Logger()
}
