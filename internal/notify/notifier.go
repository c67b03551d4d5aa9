package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/config"
	"github.com/cronlock/cronlock/scheduler"
)

// Defaults for zero Options fields.
const (
	// DefaultTimeout bounds one delivery attempt.
	DefaultTimeout = 10 * time.Second
	// DefaultRetries is how many times a failed delivery is retried.
	DefaultRetries = 3
	// DefaultBackoff is the pause before the first retry; it doubles for
	// each further retry (1s, 2s, 4s).
	DefaultBackoff = time.Second
	// DefaultQueueSize bounds the notifications waiting for a worker.
	DefaultQueueSize = 256
	// DefaultWorkers is how many deliveries run at once: enough that one
	// hanging endpoint does not hold up the others.
	DefaultWorkers = 4
)

// Options configure a Notifier. Zero values select the defaults.
type Options struct {
	// Logger receives the notifier's lines as they are: the caller names
	// the component (the daemon adds component=notify), as for every
	// other component, so that the key appears once.
	Logger zerolog.Logger
	// Registerer receives the Prometheus metrics; nil: not registered.
	Registerer prometheus.Registerer
	// Client sends webhook requests. Nil: a client that does not follow
	// redirects (a 3xx is a failed delivery), since a redirected POST may
	// turn into a GET without the payload and would carry the configured
	// headers to another URL.
	Client *http.Client
	// Timeout bounds one attempt (request and response, or the command's
	// run). Default DefaultTimeout.
	Timeout time.Duration
	// Retries is how many times a failed attempt is retried. Default
	// DefaultRetries; a negative value means no retries.
	Retries int
	// Backoff is the pause before the first retry, doubled for each further
	// one. Default DefaultBackoff.
	Backoff time.Duration
	// QueueSize and Workers size the delivery queue and its workers.
	// Defaults DefaultQueueSize and DefaultWorkers.
	QueueSize int
	Workers   int
}

func (o Options) withDefaults() Options {
	if o.Client == nil {
		o.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	switch {
	case o.Retries == 0:
		o.Retries = DefaultRetries
	case o.Retries < 0:
		o.Retries = 0
	}
	if o.Backoff <= 0 {
		o.Backoff = DefaultBackoff
	}
	if o.QueueSize <= 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	return o
}

// Notifier delivers notifications for the results of jobs. It is safe for
// concurrent use. New starts its workers; Close stops them.
type Notifier struct {
	opts    Options
	log     zerolog.Logger
	metrics *metrics

	mu      sync.RWMutex
	targets map[string][]target // job name -> targets
	closed  bool
	queue   chan delivery

	// ctx is cancelled when Close gives up waiting, aborting deliveries.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// delivery is one notification for one target.
type delivery struct {
	job, event string
	target     target
	body       []byte
}

// New returns a Notifier with no targets and starts its workers. It fails
// only when the metrics cannot be registered.
func New(opts Options) (*Notifier, error) {
	opts = opts.withDefaults()
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, fmt.Errorf("notify: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &Notifier{
		opts:    opts,
		log:     opts.Logger,
		metrics: m,
		targets: map[string][]target{},
		queue:   make(chan delivery, opts.QueueSize),
		ctx:     ctx,
		cancel:  cancel,
	}
	n.wg.Add(opts.Workers)
	for range opts.Workers {
		go n.work()
	}
	return n, nil
}

// SetTargets replaces the targets of every job: jobs maps a job name to its
// targets, and jobs not in it get no notifications. Call it at start-up and
// on every configuration reload with config.Config.NotifyTargets().
// Notifications already queued are delivered to the targets they were
// queued for. On error (a target that config validation would reject) the
// previous targets stay in effect.
func (n *Notifier) SetTargets(jobs map[string][]config.NotifyTarget) error {
	out := map[string][]target{}
	// A list many jobs share (the top-level one they inherit) is built
	// once and shared: built per job, one webhook cost some 300 bytes a
	// job, and an empty map sized for every job 58.
	built := map[*config.NotifyTarget][]target{}
	var errs []error
	for name, list := range jobs {
		if len(list) == 0 {
			continue
		}
		tgs, ok := built[&list[0]]
		if !ok {
			tgs = make([]target, 0, len(list))
			for i, t := range list {
				tg, err := newTarget(t, n.opts)
				if err != nil {
					errs = append(errs, fmt.Errorf("notify: job %q target %d: %w", name, i, err))
					continue
				}
				tgs = append(tgs, tg)
			}
			built[&list[0]] = tgs
		}
		if len(tgs) > 0 {
			out[name] = tgs
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	n.mu.Lock()
	n.targets = out
	n.mu.Unlock()
	return nil
}

// Notify queues the notifications for run, whose job's previous finished
// run had status previous ("" if none); see Events. It never blocks: a
// notification that does not fit in the queue, or comes after Close, is
// dropped, logged and counted as failed.
//
// Ticks skipped because the job's own previous run still ran (missed with
// reason overlap) fire nothing: like Kubernetes' concurrencyPolicy Forbid,
// that is the job being slower than its schedule, not an outage; the
// history and cronlock_ticks_missed_total{reason="overlap"} still show it.
func (n *Notifier) Notify(run scheduler.Run, previous scheduler.RunStatus) {
	if run.Status == scheduler.StatusMissed && run.Reason == scheduler.ReasonOverlap {
		return
	}
	events := RunEvents(run, previous)
	if len(events) == 0 {
		return
	}
	n.mu.RLock()
	defer n.mu.RUnlock()
	bodies := map[string][]byte{} // event -> payload JSON, shared by targets
	for _, t := range n.targets[run.Job] {
		i := slices.IndexFunc(events, t.fires)
		if i < 0 {
			continue
		}
		ev := events[i]
		if bodies[ev] == nil {
			b, err := json.Marshal(NewPayload(ev, run))
			if err != nil { // cannot happen: Payload has only plain fields
				n.drop(run.Job, ev, t, fmt.Errorf("encode payload: %w", err))
				continue
			}
			bodies[ev] = b
		}
		n.enqueue(delivery{job: run.Job, event: ev, target: t, body: bodies[ev]})
	}
}

// enqueue queues d without blocking. The caller holds n.mu (read).
func (n *Notifier) enqueue(d delivery) {
	if n.closed {
		n.drop(d.job, d.event, d.target, errors.New("notifier is closed"))
		return
	}
	select {
	case n.queue <- d:
	default:
		n.drop(d.job, d.event, d.target, fmt.Errorf("queue full (%d notifications waiting)", cap(n.queue)))
	}
}

func (n *Notifier) drop(job, event string, t target, err error) {
	n.metrics.failed.WithLabelValues(job).Inc()
	n.log.Error().Err(err).Str("job", job).Str("event", event).Str("target", t.String()).
		Msg("notification dropped")
}

// Close stops accepting notifications and waits until the queued and
// in-flight ones are delivered or have failed, or until ctx is done. Then it
// aborts the remaining deliveries (each observes the cancellation at once:
// requests are cancelled, commands killed) and waits for the workers before
// returning ctx's error. Calling Close again returns at once.
func (n *Notifier) Close(ctx context.Context) error {
	n.mu.Lock()
	if !n.closed {
		n.closed = true
		close(n.queue)
	}
	n.mu.Unlock()
	done := make(chan struct{})
	go func() {
		n.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		n.cancel()
		return nil
	case <-ctx.Done():
		n.cancel()
		<-done
		return ctx.Err()
	}
}

// work delivers queued notifications until the queue is closed and empty.
func (n *Notifier) work() {
	defer n.wg.Done()
	for d := range n.queue {
		n.deliver(d)
	}
}

// deliver tries d up to 1+Retries times and records the outcome.
func (n *Notifier) deliver(d delivery) {
	log := n.log.With().Str("job", d.job).Str("event", d.event).Str("target", d.target.String()).Logger()
	var err error
	attempt := 0
	for backoff := n.opts.Backoff; ; backoff *= 2 {
		attempt++
		var retry bool
		retry, err = n.attempt(d)
		if err == nil {
			n.metrics.sent.WithLabelValues(d.job).Inc()
			log.Debug().Int("attempt", attempt).Msg("notification sent")
			return
		}
		if !retry || attempt > n.opts.Retries || n.ctx.Err() != nil {
			break
		}
		log.Warn().Err(err).Int("attempt", attempt).Float64("retry_in_seconds", backoff.Seconds()).Msg("notification failed; retrying")
		if !n.sleep(backoff) {
			break
		}
	}
	n.metrics.failed.WithLabelValues(d.job).Inc()
	log.Error().Err(err).Int("attempts", attempt).Msg("notification not delivered")
}

// attempt runs one delivery attempt bounded by Timeout.
func (n *Notifier) attempt(d delivery) (retry bool, err error) {
	ctx, cancel := context.WithTimeout(n.ctx, n.opts.Timeout)
	defer cancel()
	retry, err = d.target.send.send(ctx, d)
	if err != nil && ctx.Err() != nil && n.ctx.Err() == nil {
		err = fmt.Errorf("timed out after %v: %w", n.opts.Timeout, err)
		retry = true
	}
	return retry, err
}

// sleep waits for d, or returns false early when Close aborts deliveries.
func (n *Notifier) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-n.ctx.Done():
		return false
	}
}
