package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/config"
	"github.com/cronlock/cronlock/lock"
	"github.com/cronlock/cronlock/scheduler"
)

// Client serves the operator commands (locks, status, trigger, unlock,
// suspend, resume, replicas): a
// connection reached as Dial describes, the Locker on the lock bucket and
// the jobs' locks in the history bucket (see joblocks.go).
type Client struct {
	cfg    *config.Config
	log    zerolog.Logger
	conn   *Conn
	locker *lock.Locker
	// runtime is the runtime jobs LoadRuntimeJobs loaded, nil before.
	runtime *clientRuntime
}

// Dial connects an operator command to the NATS of cfg: nats.url if set;
// else the embedded server of a `cronlock run` on this host at
// nats.embedded.listen, if one answers there; else an embedded server of its
// own on nats.embedded.store_dir, which fails with an error matching
// ErrStoreInUse while another cronlock process holds that store. It opens
// (creating when missing) the lock bucket. With a ctx of FailOnRefusal, a
// permission the server refuses the connection cancels that context.
func Dial(ctx context.Context, cfg *config.Config, log zerolog.Logger) (*Client, error) {
	conn, err := dialOperator(cfg.NATS, log)
	if err != nil {
		return nil, err
	}
	conn.cancelOnRefusal(ctx)
	locker, err := lock.New(ctx, conn.JS, LockOptions(cfg, log))
	if err != nil {
		conn.Close()
		return nil, err
	}
	return &Client{cfg: cfg, log: log, conn: conn, locker: locker}, nil
}

// Close closes the Locker, the connection and any embedded server.
func (c *Client) Close() {
	c.locker.Close()
	c.conn.Close()
}

// JobHistory is a job's recent runs, newest first, and its suspension.
type JobHistory struct {
	Job config.Job
	// Source is SourceFile or SourceRuntime.
	Source string
	Runs   []scheduler.Run
	// Suspended is the job's suspension in the shared state (cronlock
	// suspend), nil when it has none. A job can also be suspended by its
	// configuration; see JobHistory.IsSuspended.
	Suspended *scheduler.Suspension
	// ConfigSuspended: the configuration suspends the job (suspended: true),
	// whatever the shared state says.
	ConfigSuspended bool
	// Corrupt, when set, says why the job's record in the history bucket
	// is not a job state; Runs and Suspended are then unknown (empty). A
	// running replica repairs it at the job's next tick.
	Corrupt string
	// OtherDefinition is the definition hash of the job's last claim when
	// it is not this configuration's (see OtherDefinition), else "".
	OtherDefinition string
	// Backfill is the job's backfill in progress, nil if none.
	Backfill *scheduler.Backfill
}

// IsSuspended reports whether no replica starts the job's ticks: the
// shared state or the configuration suspends it.
func (h JobHistory) IsSuspended() bool {
	return h.Suspended != nil || h.ConfigSuspended
}

// History returns up to n recent runs (all kept ones if n <= 0) of the jobs
// called names, in that order, or of every job of the configuration, in
// file order, and then of every runtime job loaded, when names is empty; from the shared history bucket, each
// finished run with the output tail kept for it. A name the configuration
// does not define is an error matching ErrNoJob.
func (c *Client) History(ctx context.Context, n int, names ...string) ([]JobHistory, error) {
	jobs, err := c.jobsNamed(names)
	if err != nil {
		return nil, err
	}
	h, err := c.history(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]JobHistory, len(jobs))
	errs := make([]error, len(jobs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(historyInFlight, len(jobs)) {
		wg.Go(func() {
			for i := range next {
				out[i], errs[i] = c.jobHistory(ctx, h, jobs[i], n)
			}
		})
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err // the first: when NATS fails, every read says the same
		}
	}
	return out, nil
}

// historyInFlight is how many jobs' histories History reads at once: one
// job at a time, 100,000 runtime jobs took 18 s of a command's 30.
const historyInFlight = 32

// jobHistory reads cj's last n runs (all with n 0) with their outputs.
func (c *Client) jobHistory(ctx context.Context, h *scheduler.History, cj config.Job, n int) (JobHistory, error) {
	_, source, _ := c.findJob(cj.Name)
	st, err := sharedState(ctx, h, RunsOnEveryReplica(cj), cj.Name)
	if bad := (*scheduler.CorruptError)(nil); errors.As(err, &bad) {
		return JobHistory{Job: cj, Source: source, ConfigSuspended: ConfigSuspended(cj), Corrupt: bad.Error()}, nil
	}
	if err != nil {
		return JobHistory{}, err
	}
	runs := st.Runs
	if n > 0 && len(runs) > n {
		runs = runs[:n]
	}
	if err := withOutput(ctx, h, runs); err != nil {
		return JobHistory{}, err
	}
	hj := JobHistory{Job: cj, Source: source, Runs: runs, Suspended: st.Suspended, ConfigSuspended: ConfigSuspended(cj),
		OtherDefinition: OtherDefinition(cj, st.Definition), Backfill: st.Backfill}
	if c.runtimeInvalid(cj.Name) { // not what a replica runs: no definition to compare
		hj.OtherDefinition = ""
	}
	return hj, nil
}

// jobsNamed is the jobs called names, in that order and each once, or
// every job of the configuration and every runtime job loaded when names
// is empty.
func (c *Client) jobsNamed(names []string) ([]config.Job, error) {
	if len(names) == 0 {
		return append(slices.Clip(c.cfg.Jobs), c.runtimeJobs()...), nil
	}
	jobs := make([]config.Job, 0, len(names))
	seen := make(map[string]bool, len(names))
	for _, name := range names {
		cj, _, err := c.findJob(name)
		if err != nil {
			return nil, err
		}
		if !seen[name] {
			seen[name] = true
			jobs = append(jobs, cj)
		}
	}
	return jobs, nil
}

// withOutput fills in the output of the runs that had a process and ended;
// the others (running, missed, skipped) have none stored.
func withOutput(ctx context.Context, h *scheduler.History, runs []scheduler.Run) error {
	for i, r := range runs {
		if !r.Finished() || r.Start.IsZero() {
			continue
		}
		out, err := h.Output(ctx, r)
		if err != nil {
			return fmt.Errorf("output of %q run %d: %w", r.Job, r.ID, err)
		}
		runs[i].Output = out
	}
	return nil
}

// history opens the shared run history (creating its bucket when missing).
func (c *Client) history(ctx context.Context) (*scheduler.History, error) {
	return scheduler.OpenHistory(ctx, c.conn.JS, HistoryOptions(c.cfg))
}

// ErrNoJob is returned for a job name the configuration does not define.
var ErrNoJob = errors.New("no such job in the configuration")

// FindJob returns the job called name, or an error matching ErrNoJob.
func FindJob(cfg *config.Config, name string) (config.Job, error) {
	for _, j := range cfg.Jobs {
		if j.Name == name {
			return j, nil
		}
	}
	return config.Job{}, fmt.Errorf("job %q: %w %s", name, ErrNoJob, cfg.Path)
}

// Trigger runs the job once now in this process, under its lock, and
// returns the run's error (lock.ErrNotAcquired, wrapped, if it is running
// elsewhere). The run is recorded in the shared history as manual. ctx
// cancels the run: the command gets SIGTERM, then SIGKILL after its grace.
func (c *Client) Trigger(ctx context.Context, name string) error {
	cj, _, err := c.findJob(name)
	if err != nil {
		return err
	}
	s, err := scheduler.New(ctx, c.conn.JS, c.locker, SchedulerOptions(c.cfg, c.log, nil))
	if err != nil {
		return err
	}
	if err := s.Add(Job(cj, JobOptionsFor(c.cfg), c.log)); err != nil {
		return err
	}
	_, err = s.TriggerRun(ctx, name, nil)
	return err
}

// Suspend suspends the job for every replica through the shared state:
// they start none of its ticks from within a second on, and a run in
// progress goes on. by labels who did it. Errors match ErrNoJob for a job
// the configuration does not define.
func (c *Client) Suspend(ctx context.Context, name, by string) error {
	if _, _, err := c.findJob(name); err != nil {
		return err
	}
	h, err := c.history(ctx)
	if err != nil {
		return err
	}
	return h.Suspend(ctx, name, by, time.Now())
}

// Resume lifts the job's suspension in the shared state (a configuration
// that suspends the job still does). Errors match ErrNoJob for a job the
// configuration does not define.
func (c *Client) Resume(ctx context.Context, name string) error {
	if _, _, err := c.findJob(name); err != nil {
		return err
	}
	h, err := c.history(ctx)
	if err != nil {
		return err
	}
	return h.Resume(ctx, name)
}

// Replicas returns the live replicas as they announce themselves, sorted by
// id.
func (c *Client) Replicas(ctx context.Context) ([]scheduler.Replica, error) {
	return scheduler.ListReplicas(ctx, c.conn.JS, c.cfg.Replicas.Bucket)
}

// ConfigSuspended reports whether the configuration suspends the job
// (suspended: true), whatever the shared state says.
func ConfigSuspended(cj config.Job) bool { return cj.Suspended }

// ErrNoServer is returned by DialRunning when the configuration names no
// NATS server to connect to.
var ErrNoServer = errors.New("no NATS server configured: nats.url and nats.embedded.listen are empty")

// DialRunning is Dial for a command that only looks: it connects to
// nats.url, else to the embedded server of a `cronlock run` at
// nats.embedded.listen, but never starts an embedded server of its own
// (which would create or lock the store). Without either it returns
// ErrNoServer.
func DialRunning(ctx context.Context, cfg *config.Config, log zerolog.Logger) (*Client, error) {
	if cfg.NATS.URL == "" {
		if cfg.NATS.Embedded.Listen == "" {
			return nil, ErrNoServer
		}
		local := *cfg
		local.NATS.URL = "nats://" + connectAddr(cfg.NATS.Embedded.Listen)
		cfg = &local
	}
	return Dial(ctx, cfg, log)
}

// Suspensions returns whether each job of the configuration is suspended,
// by the shared state or by the configuration, by name.
func (c *Client) Suspensions(ctx context.Context) (map[string]bool, error) {
	h, err := c.history(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(c.cfg.Jobs))
	for _, cj := range c.cfg.Jobs {
		st, err := h.State(ctx, cj.Name)
		if err != nil && !errors.As(err, new(*scheduler.CorruptError)) { // corrupt: its suspension is unknown
			return nil, err
		}
		out[cj.Name] = st.Suspended != nil || ConfigSuspended(cj)
	}
	return out, nil
}

// Timings of a trigger on the replicas (TriggerRemote, AwaitRun).
const (
	// triggerRetry is how long TriggerRemote waits before asking again
	// when no replica is subscribed or the one asked was shutting down.
	triggerRetry = 250 * time.Millisecond
	// resultPoll is how often AwaitRun reads the run's entry and lock.
	resultPoll = 500 * time.Millisecond
	// ResultGrace is how long AwaitRun waits for a result after the run's
	// lock is gone (released, expired or taken over) before it gives the
	// run up: a replica records the result before it releases the lock,
	// or, when NATS failed it then, as soon as NATS answers again.
	ResultGrace = 5 * time.Second
)

// ErrNoReplica is returned by TriggerRemote when no replica took the
// request in time: none runs with the job configured (and not suspended by
// its configuration), or none answered.
var ErrNoReplica = errors.New("no replica took the trigger request")

// ErrNoResult is returned by AwaitRun when the run's lock is gone and no
// result was recorded within ResultGrace: the replica running it died or
// lost NATS.
var ErrNoResult = errors.New("the replica running it stopped without recording a result")

// TriggerRemote asks the running replicas to run the job now (see
// TriggerSubject): one of them runs it under its lock, recorded as manual,
// and TriggerRemote returns its entry in the history (running, with its
// ID, owner and token) as soon as it has started. It asks again while no
// replica is subscribed or the one asked refuses (shutting down), until
// timeout: then the error matches ErrNoReplica. A job whose lock is held
// is an error matching lock.ErrNotAcquired, saying that it "is running
// elsewhere" and naming the holder. by says who
// asks, for the replica's log.
func (c *Client) TriggerRemote(ctx context.Context, name, by string, timeout time.Duration) (scheduler.Run, error) {
	if _, _, err := c.findJob(name); err != nil {
		return scheduler.Run{}, err
	}
	body, err := json.Marshal(TriggerRequest{By: by})
	if err != nil {
		return scheduler.Run{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	subject := TriggerSubject(c.cfg, name)
	why := "no replica is subscribed"
	for {
		m, err := c.conn.NC.RequestWithContext(ctx, subject, body)
		switch {
		case err == nil:
			r, err := parseTriggerReply(m.Data)
			if err != nil || r.Status != TriggerRefused {
				return triggerOutcome(name, r, err)
			}
			why = r.Error
		case errors.Is(err, nats.ErrNoResponders):
		case ctx.Err() != nil:
			why = "no replica answered"
		default:
			return scheduler.Run{}, err
		}
		select {
		case <-ctx.Done():
			if errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
				return scheduler.Run{}, fmt.Errorf("job %q: %w within %v (%s on %s)", name, ErrNoReplica, timeout, why, subject)
			}
			return scheduler.Run{}, ctx.Err()
		case <-time.After(triggerRetry):
		}
	}
}

// triggerOutcome maps a replica's final answer to TriggerRemote's result.
func triggerOutcome(name string, r TriggerReply, err error) (scheduler.Run, error) {
	switch {
	case err != nil:
		return scheduler.Run{}, err
	case r.Status == TriggerStarted:
		return *r.Run, nil
	case r.Status == TriggerBusy && r.Holder != "":
		return scheduler.Run{}, fmt.Errorf("job %q is running elsewhere, on %s (token %d): %w", name, r.Holder, r.Token, lock.ErrNotAcquired)
	case r.Status == TriggerBusy:
		return scheduler.Run{}, fmt.Errorf("job %q is running elsewhere: %s: %w", name, r.Error, lock.ErrNotAcquired)
	}
	return scheduler.Run{}, fmt.Errorf("job %q: the replica could not start it: %s", name, r.Error)
}

// AwaitRun waits until the run that TriggerRemote started has a result in
// the shared history and returns its entry, with its output tail. It
// reads the entry and the run's lock every resultPoll; failed reads (NATS
// away) are retried. When the lock is no longer held with the run's token
// and no result is recorded within ResultGrace, it returns the last entry
// it read and an error matching ErrNoResult: the wait is bounded by the run
// (its lease, lock.lease, when its replica dies), not by a timeout of its
// own. ctx stops the wait, not the run.
func (c *Client) AwaitRun(ctx context.Context, started scheduler.Run) (scheduler.Run, error) {
	h, err := c.history(ctx)
	if err != nil {
		return started, err
	}
	tick := time.NewTicker(resultPoll)
	defer tick.Stop()
	last := started
	var gone time.Time // when the run's lock was first seen gone
	for {
		st, err := h.State(ctx, started.Job)
		if err != nil {
			c.log.Debug().Err(err).Str("job", started.Job).Msg("cannot read the job's history; retrying")
		} else if r, ok := c.readRun(ctx, h, st, started); ok {
			last = r
			if r.Finished() {
				return r, nil
			}
		}
		switch held := err == nil && holds(st, started); {
		case err != nil || held:
			gone = time.Time{}
		case gone.IsZero():
			gone = time.Now()
		case time.Since(gone) > ResultGrace:
			return last, fmt.Errorf("run %d of %q on %s: %w (its lock is gone and no result came within %v)",
				started.ID, started.Job, started.Owner, ErrNoResult, ResultGrace)
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-tick.C:
		}
	}
}

// readRun finds the entry of run in the job's state, with its output once
// it is finished; ok is false when it cannot be read (or has left the kept
// history).
func (c *Client) readRun(ctx context.Context, h *scheduler.History, st scheduler.JobState, run scheduler.Run) (scheduler.Run, bool) {
	for _, r := range st.Runs {
		if r.ID != run.ID {
			continue
		}
		if r.Finished() && !r.Start.IsZero() {
			out, err := h.Output(ctx, r)
			if err != nil {
				c.log.Debug().Err(err).Str("job", run.Job).Msg("cannot read the run's output; retrying")
				return scheduler.Run{}, false
			}
			r.Output = out
		}
		return r, true
	}
	return scheduler.Run{}, false
}

// holds reports whether the job's state shows run's lock still held with
// its token.
func holds(st scheduler.JobState, run scheduler.Run) bool {
	hd := st.Holder
	return hd != nil && hd.Token == run.Token && hd.Owner == run.Owner
}
