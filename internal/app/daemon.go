package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
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
	"github.com/cronlock/cronlock/internal/jsapi"
	"github.com/cronlock/cronlock/internal/notify"
	"github.com/cronlock/cronlock/internal/web"
	"github.com/cronlock/cronlock/lock"
	"github.com/cronlock/cronlock/scheduler"
)

// startupAttempt bounds one attempt at opening the lock and history
// buckets at start. Right after a NATS node restarts, a JetStream API
// request can go unanswered until a leader is elected; a fresh request
// after a few seconds gets through, so start-up retries rather than waits.
const startupAttempt = 5 * time.Second

// Stages of start-up, as /readyz reports them until the scheduler runs.
const (
	stageStarting     = "starting"
	stageConnecting   = "connecting to "
	stageOpening      = "opening buckets"
	stageShuttingDown = "shutting down"
)

// Daemon is `cronlock run`: the scheduler running every configured job under
// its lock, the HTTP server, and reload on SIGHUP or, with config_watch, on
// a change of the configuration file.
type Daemon struct {
	log    zerolog.Logger
	conn   atomic.Pointer[Conn] // nil until dialled; read by /readyz and /metrics
	locker *lock.Locker         // set by openScheduler
	sched  *scheduler.Scheduler // set by openScheduler, under mu
	// runtime schedules the runtime jobs (nil when not enabled); set once
	// by schedule. A pointer of its own, not under mu: trigger requests
	// (served on NATS's goroutine, which must not wait) look jobs up in it
	// while a reload holds mu.
	runtime atomic.Pointer[runtimeJobs]
	reg     *prometheus.Registry
	reloads *reloadMetrics
	// reloading serializes Reload, which parses the file without mu: the
	// reloads apply in the order they read the file.
	reloading sync.Mutex
	// notifier sends the notifications of the results this replica
	// records (scheduler.Options.OnResult).
	notifier *notify.Notifier
	http     httpListeners          // what listenHTTP bound
	web      *webSource             // the status page's source
	triggers *triggerServer         // trigger requests over NATS
	stage    atomic.Pointer[string] // why the daemon is not ready while it starts

	// tokens are the HTTP tokens in effect; see webtokens.go.
	tokens atomic.Pointer[web.Tokens]

	schedCtx    context.Context // cancelled when the scheduler must stop
	schedCancel context.CancelFunc
	dialCtx     context.Context // cancelled to abandon connection attempts
	dialCancel  context.CancelFunc
	running     atomic.Bool // scheduler.Run is executing

	// sigs receives SIGINT, SIGTERM and SIGHUP from NewDaemon on, so that
	// none arriving during start-up takes its default action (SIGHUP
	// would kill the process); Run handles them.
	sigs chan os.Signal

	mu  sync.Mutex     // serialises reloads and the scheduler's creation
	cfg *config.Config // in effect: jobs as last reloaded, the rest as started
}

// NewDaemon does what must not wait for NATS: it sets up logging to logOut
// as cfg.Log says, registers the metrics, starts the embedded server when
// nats.url is empty (a store in use or a port taken is final), and binds
// the HTTP listener. Connecting to nats.url and opening the buckets happen
// in Run, while HTTP already serves: a NATS that is not up yet is waited
// for, not an error. Run must then be called once: it releases everything
// NewDaemon acquired. On error everything acquired so far is released.
//
// ctx done by the time NewDaemon returns is an error (start-up aborted).
// From here on the process's SIGINT, SIGTERM and SIGHUP belong to the
// daemon; those arriving before Run are handled by Run.
func NewDaemon(ctx context.Context, cfg *config.Config, logOut io.Writer) (*Daemon, error) {
	log, err := NewLogger(cfg.Log, logOut)
	if err != nil {
		return nil, err
	}
	d := &Daemon{log: log, cfg: cfg, reg: prometheus.NewRegistry(), sigs: make(chan os.Signal, 4)}
	d.web = &webSource{d: d, log: log.With().Str("component", "web").Logger()}
	d.applyTokens(cfg, zerolog.Nop())
	d.triggers = newTriggerServer(d)
	signal.Notify(d.sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	d.schedCtx, d.schedCancel = context.WithCancel(context.Background())
	d.dialCtx, d.dialCancel = context.WithCancel(context.Background())
	d.setStage(stageStarting)
	log.Info().Str("version", Version()).Str("config", cfg.Path).Int("jobs", len(cfg.Jobs)).Msg("starting cronlock")
	err = d.prepare()
	if err == nil && ctx.Err() != nil {
		err = context.Cause(ctx)
	}
	if err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

// prepare acquires what NewDaemon does; close releases it.
func (d *Daemon) prepare() error {
	if err := d.registerMetrics(); err != nil {
		return err
	}
	n, err := notify.New(notify.Options{Logger: d.log.With().Str("component", "notify").Logger(), Registerer: d.reg})
	if err != nil {
		return err
	}
	d.notifier = n
	if err := n.SetTargets(d.cfg.NotifyTargets()); err != nil {
		return err
	}
	if d.cfg.NATS.URL == "" {
		c, err := dialEmbedded(d.cfg.NATS, d.log)
		if err != nil {
			return err
		}
		d.conn.Store(c)
	}
	return d.listenHTTP()
}

// setStage records what start-up is doing, for /readyz.
func (d *Daemon) setStage(s string) { d.stage.Store(&s) }

// schedule connects to NATS, opens the buckets, then runs the scheduler
// until schedCtx is done. A shutdown during start-up is not an error; a
// non-transient failure to start is.
func (d *Daemon) schedule() error {
	ctx := d.schedCtx
	err := d.connect(ctx)
	if err == nil {
		err = d.openBuckets(ctx)
	}
	if err != nil {
		if ctx.Err() != nil {
			d.log.Info().Msg("shut down before start-up completed")
			return nil
		}
		return err
	}
	if err := d.followRuntimeJobs(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	// Parsing a large file and adding its jobs leave the heap's peak
	// behind (a 100,000-job file: ~250 MB more than the ~150 MB live), which
	// the runtime would return to the system only slowly: give it back once,
	// now that start-up is done.
	debug.FreeOSMemory()
	d.running.Store(true)
	defer d.running.Store(false)
	d.log.Info().Msg("scheduler running")
	d.mu.Lock()
	d.triggers.sync(d.conn.Load().NC, d.cfg)
	d.mu.Unlock()
	return d.sched.Run(ctx)
}

// connect dials nats.url unless the embedded server is connected already,
// and waits until the connection is up. Attempts are retried forever; only
// the client giving up for good (credentials rejected twice) or ctx ends it.
func (d *Daemon) connect(ctx context.Context) error {
	c := d.conn.Load()
	if c == nil {
		url := redactURLs(d.cfg.NATS.URL)
		d.setStage(stageConnecting + url)
		var err error
		c, err = dialRetrying(d.dialCtx, d.cfg.NATS, d.log, func(err error) {
			if !d.running.Load() {
				d.setStage(stageConnecting + url + ": " + err.Error())
			}
		})
		if err != nil {
			return err
		}
		d.conn.Store(c)
	}
	if err := c.WaitConnected(ctx); err != nil {
		return err
	}
	return d.waitCluster(ctx, c)
}

// openBuckets calls openScheduler, retrying with backoff for as long as
// NATS does not answer (a cluster electing leaders, a server still
// starting), until ctx is done. Other errors (a bucket that cannot work, a
// server too old) end start-up at once. A permission NATS refuses is
// retried too (it may be granted meanwhile); the connection logs it.
func (d *Daemon) openBuckets(ctx context.Context) error {
	wait := openRetryFirst
	for {
		d.setStage(stageOpening)
		err := d.openAttempt(ctx)
		if err == nil {
			d.mu.Lock()
			cfg := d.cfg
			d.mu.Unlock()
			warnReplicas(ctx, d.conn.Load().JS, cfg, d.log)
			return nil
		}
		var refused *PermissionError
		isRefused := errors.As(err, &refused)
		if ctx.Err() != nil || (!isRefused && !transient(err)) {
			return err
		}
		d.setStage(stageOpening + ": " + err.Error())
		if isRefused {
			d.log.Debug().Err(err).Float64("retry_in_seconds", wait.Seconds()).Msg("cannot open the buckets; retrying")
		} else {
			d.log.Warn().Err(err).Float64("retry_in_seconds", wait.Seconds()).Msg("NATS JetStream not answering yet; retrying")
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(wait*2, openRetryMax)
	}
}

// openAttempt is one attempt of openBuckets, bounded by startupAttempt. It
// fails as soon as NATS refuses the connection a permission, with that
// *PermissionError, rather than waiting for a reply that cannot come.
func (d *Daemon) openAttempt(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, startupAttempt)
	defer cancel()
	ctx, stop := d.conn.Load().failOnRefusal(ctx)
	defer stop()
	err := d.openScheduler(ctx)
	if refused := Refused(ctx); err != nil && refused != nil {
		return refused
	}
	return err
}

// openScheduler opens the lock and history buckets and creates the
// scheduler with every job of the configuration in effect. On error it
// leaves nothing open or registered, so that it can be called again.
func (d *Daemon) openScheduler(ctx context.Context) error {
	d.mu.Lock()
	cfg := d.cfg // jobs may change by a reload meanwhile; the rest does not
	d.mu.Unlock()
	locker, err := lock.New(ctx, d.conn.Load().JS, LockOptions(cfg, d.log))
	if err != nil {
		return err
	}
	// scheduler.New registers its metrics last: a failed New leaves the
	// registry as it was.
	opts := SchedulerOptions(cfg, d.log, d.reg)
	opts.StreamJobMetrics = true // metricsHandler writes them
	opts.OnResult = func(r scheduler.Run) {
		d.notifier.Notify(r, r.Previous)
		d.afterRun(r)
	}
	sched, err := scheduler.New(ctx, d.conn.Load().JS, locker, opts)
	if err != nil {
		locker.Close()
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	jobs := NewJobMaker(d.jobOptions(cfg), d.log)
	for _, cj := range d.cfg.Jobs {
		if err := sched.Add(jobs.Job(cj)); err != nil {
			locker.Close() // not transient: start-up ends, so the registered metrics do not matter
			return fmt.Errorf("%s:%d: job %q: %w", cfg.Path, cj.Line, cj.Name, err)
		}
	}
	d.locker, d.sched = locker, sched
	return nil
}

// transient reports errors that a later attempt may not meet: those
// jsapi.Call retries (no answer, too few peers online to place an R3
// bucket), and at start-up also a reconnecting client or a server whose
// JetStream is not up yet (no responders, 503, 504).
func transient(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && (apiErr.Code == 503 || apiErr.Code == 504) {
		return true
	}
	return jsapi.Unanswered(err) || errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrDisconnected) ||
		errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, jetstream.ErrJetStreamNotEnabled)
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
	return scheduler.Options{
		Logger:         log,
		AcquireTimeout: cfg.Lock.AcquireTimeout.Duration(),
		ShutdownGrace:  cfg.ShutdownGrace.Duration(),
		// shutdown_grace: 0s means "do not wait" (the scheduler reads a
		// zero ShutdownGrace as its default).
		ShutdownNow:       cfg.ShutdownGrace.Duration() == 0,
		MaxConcurrentRuns: cfg.MaxConcurrentRuns,
		Registerer:        reg,
		HistorySize:       cfg.History.Size,
		HistoryBucket:     cfg.History.Bucket,
		HistoryReplicas:   cfg.Lock.Replicas,
		ReplicaBucket:     cfg.Replicas.Bucket,
		ReplicaLabels:     cfg.Replica.Labels,
		Version:           Version(),
	}
}

// HTTPAddr is the address the HTTP server listens on, or nil when it is
// disabled. It is useful with a ":0" listen address.
func (d *Daemon) HTTPAddr() net.Addr {
	if d.http.main == nil {
		return nil
	}
	return d.http.main.Addr()
}

// Ready reports whether the daemon can run jobs: the scheduler is running
// and NATS is connected. /readyz serves it.
func (d *Daemon) Ready() bool {
	return d.running.Load() && d.schedCtx.Err() == nil && d.connected() && d.runtimeCaughtUp()
}

// connected reports whether NATS is connected now.
func (d *Daemon) connected() bool {
	c := d.conn.Load()
	return c != nil && c.Connected()
}

// Run serves HTTP at once, connects to NATS (retrying until it answers),
// opens the buckets and schedules the jobs, until ctx is done or the process
// receives SIGINT or SIGTERM; SIGHUP reloads the configuration file (see
// Reload). Until jobs can run, /healthz answers 200 and /readyz 503 with the
// stage of start-up. On shutdown it stops starting runs, waits up to
// shutdown_grace for the running ones, closes the HTTP server once they are
// done, then the NATS connection and the embedded server. Signals that
// arrive during the shutdown are logged and otherwise ignored: SIGKILL stops
// cronlock at once, and its running jobs with it (internal/proc). Run
// returns nil after a clean shutdown (during start-up too), or the error
// that stopped it, such as a bucket that cannot work.
func (d *Daemon) Run(ctx context.Context) error {
	defer d.close()

	term := make(chan os.Signal, 1)
	var stopping atomic.Bool
	quit := make(chan struct{})
	var bg sync.WaitGroup
	defer bg.Wait()
	defer close(quit)
	bg.Go(func() { d.handleSignals(d.sigs, term, &stopping, quit) })

	var g run.Group
	d.addStopActors(&g, ctx, term)
	d.addConfigWatch(&g)
	schedDone := make(chan struct{})
	g.Add(func() error { // start-up, then the scheduler
		defer close(schedDone)
		return d.schedule()
	}, func(error) {
		stopping.Store(true)
		d.setStage(stageShuttingDown)
		d.triggers.stop() // the other replicas take trigger requests from now on
		if !d.running.Load() {
			d.dialCancel() // nothing to finish: abandon connection attempts
		}
		d.schedCancel()
	})
	d.addHTTPActors(&g, &bg, schedDone) // closed after the scheduler
	err := g.Run()
	if err != nil {
		d.log.Error().Err(err).Msg("stopped")
	} else {
		d.log.Info().Msg("stopped")
	}
	return err
}

// addStopActors adds to g the actors that end Run: ctx done, and the first
// SIGINT or SIGTERM passed on to term.
func (d *Daemon) addStopActors(g *run.Group, ctx context.Context, term <-chan os.Signal) {
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
	d.dialCancel()
	d.http.close()
	d.web.triggers.Wait() // manual runs from the page, ended with the scheduler
	d.triggers.stop()
	d.triggers.runs.Wait() // and those requested over NATS
	if d.locker != nil {
		d.locker.Close()
	}
	if d.notifier != nil {
		// The scheduler has stopped: deliver what it queued, briefly.
		ctx, cancel := context.WithTimeout(context.Background(), notifyDrain)
		d.notifier.Close(ctx)
		cancel()
	}
	if c := d.conn.Load(); c != nil {
		c.Close()
	}
}
