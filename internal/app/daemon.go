package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/run"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/config"
	"github.com/cronlock/cronlock/lock"
	"github.com/cronlock/cronlock/scheduler"
)

// startupAttempt bounds one attempt at opening the lock and history
// buckets at start. Right after a NATS node restarts, a JetStream API
// request can go unanswered until a leader is elected; a fresh request
// after a few seconds gets through, so start-up retries rather than waits.
const startupAttempt = 5 * time.Second

// Daemon is `cronlock run`: the scheduler running every configured job under
// its lock, the HTTP server, and reload on SIGHUP or, with config_watch, on
// a change of the configuration file.
type Daemon struct {
	log     zerolog.Logger
	conn    *Conn
	locker  *lock.Locker
	sched   *scheduler.Scheduler
	reg     *prometheus.Registry
	reloads *reloadMetrics
	httpLn  net.Listener // nil when http.listen is empty

	schedCtx    context.Context // cancelled when the scheduler must stop
	schedCancel context.CancelFunc
	running     atomic.Bool // scheduler.Run is executing

	// sigs receives SIGINT, SIGTERM and SIGHUP from NewDaemon on, so that
	// none arriving during start-up takes its default action (SIGHUP
	// would kill the process). reloadPending is a SIGHUP received then.
	sigs          chan os.Signal
	reloadPending bool

	mu  sync.Mutex     // serialises reloads
	cfg *config.Config // in effect: jobs as last reloaded, the rest as started
}

// NewDaemon connects to NATS (or starts the embedded server), opens the lock
// and history buckets, registers every job of cfg and binds the HTTP
// listener, logging to logOut as cfg.Log says. Nothing is scheduled before
// Run, which must then be called once: it releases everything NewDaemon
// acquired. On error everything acquired so far is released.
//
// From here on the process's SIGINT, SIGTERM and SIGHUP belong to the
// daemon. SIGINT or SIGTERM during start-up abort it (ctx's cancellation
// too); a SIGHUP then is applied when Run starts.
func NewDaemon(ctx context.Context, cfg *config.Config, logOut io.Writer) (*Daemon, error) {
	log, err := NewLogger(cfg.Log, logOut)
	if err != nil {
		return nil, err
	}
	d := &Daemon{log: log, cfg: cfg, reg: prometheus.NewRegistry(), sigs: make(chan os.Signal, 4)}
	signal.Notify(d.sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	d.schedCtx, d.schedCancel = context.WithCancel(context.Background())

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := make(chan struct{})
	var watcher sync.WaitGroup
	watcher.Go(func() {
		for {
			select {
			case <-stop:
				return
			case s := <-d.sigs:
				if s == syscall.SIGHUP {
					d.reloadPending = true
					continue
				}
				cancel(fmt.Errorf("start-up interrupted by %v", s))
				return
			}
		}
	})
	err = d.start(ctx)
	close(stop)
	watcher.Wait()
	switch {
	case err != nil && ctx.Err() != nil:
		err = fmt.Errorf("%w: %w", context.Cause(ctx), err)
	case err == nil && ctx.Err() != nil: // interrupted just as start-up ended
		err = context.Cause(ctx)
	}
	if err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

// openBuckets opens the lock and history buckets, retrying with backoff for
// as long as NATS does not answer (a cluster electing leaders, a server
// still starting), until ctx is done. Other errors (a bucket that cannot
// work, a server too old) end start-up at once.
func (d *Daemon) openBuckets(ctx context.Context) error {
	wait := 500 * time.Millisecond
	for {
		err := d.openScheduler(ctx)
		if err == nil || !transient(err) || ctx.Err() != nil {
			return err
		}
		d.log.Warn().Err(err).Dur("retry_in", wait).Msg("NATS JetStream not answering yet; retrying")
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(wait*2, 10*time.Second)
	}
}

// openScheduler makes one attempt, bounded by startupAttempt, at opening
// the lock bucket (the Locker) and the scheduler with its history bucket.
// A failed attempt leaves neither behind, nor any scheduler metric in the
// registry.
func (d *Daemon) openScheduler(ctx context.Context) error {
	actx, cancel := context.WithTimeout(ctx, startupAttempt)
	defer cancel()
	locker, err := lock.New(actx, d.conn.JS, LockOptions(d.cfg, d.log))
	if err != nil {
		return err
	}
	sched, err := scheduler.New(actx, d.conn.JS, locker, SchedulerOptions(d.cfg, d.log, d.reg))
	if err != nil {
		locker.Close()
		return err
	}
	d.locker, d.sched = locker, sched
	return nil
}

// transient reports errors that a later attempt may not meet: no answer, no
// responders, a reconnecting client, JetStream temporarily unavailable (503)
// or too few peers online to place an R3 bucket.
func transient(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && (apiErr.Code == 503 || apiErr.Code == 504 ||
		apiErr.ErrorCode == 10005 /* no suitable peers for placement */) {
		return true
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrDisconnected) ||
		errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, jetstream.ErrJetStreamNotEnabled)
}

// start acquires what the daemon needs; close releases whatever it got.
func (d *Daemon) start(ctx context.Context) error {
	cfg, log := d.cfg, d.log
	var err error
	log.Info().Str("version", Version()).Str("config", cfg.Path).Int("jobs", len(cfg.Jobs)).Msg("starting cronlock")

	if d.conn, err = dialDaemon(cfg.NATS, log); err != nil {
		return err
	}
	if err := d.registerMetrics(); err != nil {
		return err
	}
	if err := d.openBuckets(ctx); err != nil {
		return err
	}
	for _, cj := range cfg.Jobs {
		if err := d.sched.Add(Job(cj, JobOptions{Lease: cfg.Lock.Lease.Duration()}, log)); err != nil {
			return fmt.Errorf("%s:%d: job %q: %w", cfg.Path, cj.Line, cj.Name, err)
		}
	}
	if cfg.HTTP.Listen != "" {
		if d.httpLn, err = net.Listen("tcp", cfg.HTTP.Listen); err != nil {
			return fmt.Errorf("http.listen %q: %w", cfg.HTTP.Listen, err)
		}
		log.Info().Str("addr", d.httpLn.Addr().String()).Msg("HTTP server listening: /metrics /healthz /readyz")
	}
	return nil
}

// LockOptions are the lock.Options that cfg describes.
func LockOptions(cfg *config.Config, log zerolog.Logger) lock.Options {
	return lock.Options{
		Bucket:                cfg.Lock.Bucket,
		LeaseDuration:         cfg.Lock.Lease.Duration(),
		RenewInterval:         cfg.Lock.Renew.Duration(),
		AcquireRetryBaseDelay: cfg.Lock.RetryBase.Duration(),
		AcquireRetryMaxDelay:  cfg.Lock.RetryMax.Duration(),
		OwnerID:               cfg.Lock.Owner,
		Replicas:              cfg.Lock.Replicas,
		Logger:                log.With().Str("component", "lock").Logger(),
	}
}

// SchedulerOptions are the scheduler.Options that cfg describes, with
// metrics registered on reg (nil: none).
func SchedulerOptions(cfg *config.Config, log zerolog.Logger, reg prometheus.Registerer) scheduler.Options {
	grace := cfg.ShutdownGrace.Duration()
	if grace == 0 {
		// shutdown_grace: 0s means "do not wait"; the scheduler reads a
		// zero as its 30 s default.
		grace = time.Nanosecond
	}
	return scheduler.Options{
		Logger:          log,
		AcquireTimeout:  cfg.Lock.AcquireTimeout.Duration(),
		ShutdownGrace:   grace,
		Registerer:      reg,
		HistorySize:     cfg.History.Size,
		HistoryBucket:   cfg.History.Bucket,
		HistoryReplicas: cfg.Lock.Replicas,
	}
}

// HTTPAddr is the address the HTTP server listens on, or nil when it is
// disabled. It is useful with a ":0" listen address.
func (d *Daemon) HTTPAddr() net.Addr {
	if d.httpLn == nil {
		return nil
	}
	return d.httpLn.Addr()
}

// Ready reports whether the daemon can run jobs: the scheduler is running
// and NATS is connected. /readyz serves it.
func (d *Daemon) Ready() bool {
	return d.running.Load() && d.schedCtx.Err() == nil && d.conn.Connected()
}

// Run schedules the jobs and serves HTTP until ctx is done or the process
// receives SIGINT or SIGTERM; SIGHUP reloads the configuration file (see
// Reload), and so does a change of the file when config_watch is on. On shutdown it stops starting runs, waits up to shutdown_grace for
// the running ones, closes the HTTP server once they are done, then the NATS
// connection and the embedded server. Signals that arrive during the
// shutdown are logged and otherwise ignored: SIGKILL stops cronlock at once,
// and its running jobs with it (internal/proc). Run returns nil after a clean
// shutdown, or the error that stopped it.
func (d *Daemon) Run(ctx context.Context) error {
	defer d.close()

	if d.reloadPending {
		d.Reload()
	}
	term := make(chan os.Signal, 1)
	var stopping atomic.Bool
	quit := make(chan struct{})
	var bg sync.WaitGroup
	defer bg.Wait()
	defer close(quit)
	bg.Go(func() { d.handleSignals(d.sigs, term, &stopping, quit) })

	var g run.Group
	{ // the caller's context
		stop := make(chan struct{})
		g.Add(func() error {
			select {
			case <-ctx.Done():
				d.log.Info().Msg("shutting down: context done")
			case <-stop:
			}
			return nil
		}, func(error) { close(stop) })
	}
	{ // SIGINT, SIGTERM
		stop := make(chan struct{})
		g.Add(func() error {
			select {
			case s := <-term:
				d.log.Info().Str("signal", s.String()).Msg("shutting down: waiting for running jobs (shutdown_grace)")
			case <-stop:
			}
			return nil
		}, func(error) { close(stop) })
	}
	d.addConfigWatch(&g)
	schedDone := make(chan struct{})
	{ // the scheduler
		g.Add(func() error {
			defer close(schedDone)
			d.running.Store(true)
			defer d.running.Store(false)
			d.log.Info().Msg("scheduler running")
			return d.sched.Run(d.schedCtx)
		}, func(error) {
			stopping.Store(true)
			d.schedCancel()
		})
	}
	if d.httpLn != nil { // the HTTP server, closed after the scheduler
		srv := &http.Server{Handler: d.handler(), ReadHeaderTimeout: 10 * time.Second}
		g.Add(func() error {
			if err := srv.Serve(d.httpLn); !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("HTTP server: %w", err)
			}
			return nil
		}, func(error) {
			bg.Go(func() {
				<-schedDone // keep /healthz and /metrics up while jobs drain
				sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				srv.Shutdown(sctx)
			})
		})
	}
	err := g.Run()
	if err != nil {
		d.log.Error().Err(err).Msg("stopped")
	} else {
		d.log.Info().Msg("stopped")
	}
	return err
}

// handleSignals turns SIGHUP into Reload and passes the first SIGINT or
// SIGTERM on to term; later ones are only logged. It returns when quit is
// closed.
func (d *Daemon) handleSignals(sigs <-chan os.Signal, term chan<- os.Signal, stopping *atomic.Bool, quit <-chan struct{}) {
	for {
		select {
		case <-quit:
			return
		case s := <-sigs:
			switch {
			case s == syscall.SIGHUP && !stopping.Load():
				d.Reload()
			case s == syscall.SIGHUP:
				d.log.Warn().Msg("SIGHUP ignored: shutting down")
			case stopping.Load():
				d.log.Warn().Str("signal", s.String()).Msg("already shutting down; SIGKILL stops cronlock and its running jobs at once")
			default:
				select {
				case term <- s:
				default: // one is already on its way
				}
			}
		}
	}
}

// close releases what NewDaemon acquired, in reverse order, and gives the
// signals back.
func (d *Daemon) close() {
	signal.Stop(d.sigs)
	d.schedCancel()
	if d.httpLn != nil {
		d.httpLn.Close() // already closed by the server if it ran
	}
	if d.locker != nil {
		d.locker.Close()
	}
	if d.conn != nil {
		d.conn.Close()
	}
}
