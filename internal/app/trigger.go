package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/config"
	"github.com/cronlock/cronlock/lock"
	"github.com/cronlock/cronlock/scheduler"
)

// Triggers over NATS: `cronlock trigger JOB` sends a TriggerRequest to
// TriggerSubject(cfg, JOB). Every replica subscribes once to all of them
// (TriggerSubjectPrefix + ">", one subscription however many jobs) in the
// queue group triggerQueue, so NATS hands each request to exactly one
// replica, which dispatches by the subject's job. A replica that does not
// have JOB configured (or whose configuration suspends it) refuses, as one
// shutting down does, and the client asks again, reaching another replica;
// a replica shutting down is not subscribed. The replica answers at once with a TriggerReply: the run has started (its
// entry in the history, with ID, owner and token), the job is busy (its lock
// is held), or it refuses (shutting down: the client asks again). The run's
// result is not sent: it is recorded in the shared history, where the
// client reads it (see Client.AwaitRun), so that a long run needs no
// long-lived request and a replica dying mid-run cannot leave the client
// waiting for a reply that never comes.

// triggerQueue is the queue group of the trigger subscriptions.
const triggerQueue = "cronlock-trigger"

// triggerLookup bounds each read a replica makes to answer a request (the
// job's lock holder, the history bucket on first use).
const triggerLookup = 5 * time.Second

// TriggerSubject is the subject on which the replicas sharing cfg's history
// bucket take trigger requests for job:
// cronlock.<history.bucket>.trigger.<job>.
func TriggerSubject(cfg *config.Config, job string) string {
	return TriggerSubjectPrefix(cfg) + job
}

// TriggerSubjectPrefix is TriggerSubject without the job:
// cronlock.<history.bucket>.trigger. (PERMISSIONS.md grants its ">").
func TriggerSubjectPrefix(cfg *config.Config) string {
	return "cronlock." + cfg.History.Bucket + ".trigger."
}

// TriggerRequest is the body of a trigger request.
type TriggerRequest struct {
	// By says who asked, for the replica's log ("user@host (cronlock
	// trigger)").
	By string `json:"by,omitempty"`
}

// Statuses of a TriggerReply.
const (
	TriggerStarted = "started" // Run is the run's entry, running
	TriggerBusy    = "busy"    // the job's lock is held: Holder, Token
	TriggerRefused = "refused" // this replica cannot take it now (shutting down): ask again
	TriggerError   = "error"   // the run could not start: Error
)

// TriggerReply is a replica's answer to a TriggerRequest.
type TriggerReply struct {
	Status string         `json:"status"`
	Run    *scheduler.Run `json:"run,omitempty"`
	Holder string         `json:"holder,omitempty"`
	Token  uint64         `json:"token,omitempty"`
	Error  string         `json:"error,omitempty"`
}

// triggerServer serves the trigger requests of the daemon's jobs.
type triggerServer struct {
	d   *Daemon
	log zerolog.Logger

	mu      sync.Mutex
	sub     *nats.Subscription // to every job's subject; nil until sync subscribes
	prefix  string             // TriggerSubjectPrefix
	jobs    map[string]bool    // the jobs taken: configured and not suspended by the configuration
	serving map[string]*jobTurn
	stopped bool

	// runs tracks the runs started by requests, so that the daemon waits
	// for them before closing the connection they use.
	runs sync.WaitGroup
}

func newTriggerServer(d *Daemon) *triggerServer {
	return &triggerServer{d: d, log: d.log.With().Str("component", "trigger").Logger(), serving: map[string]*jobTurn{}}
}

// jobTurn serialises the requests for one job on this replica, so that two
// of them do not race; requests for other jobs go on meanwhile.
type jobTurn struct {
	mu      sync.Mutex
	waiters int // requests holding or waiting for mu; guarded by triggerServer.mu
}

// sync takes trigger requests for cfg's jobs that its configuration does
// not suspend, and refuses the others, subscribing on nc at the first call.
// A failed subscription is logged (the other replicas take the requests)
// and tried again at the next sync. After stop it does nothing.
func (t *triggerServer) sync(nc *nats.Conn, cfg *config.Config) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	want := make(map[string]bool, len(cfg.Jobs))
	for _, cj := range cfg.Jobs {
		if !ConfigSuspended(cj) {
			want[cj.Name] = true
		}
	}
	t.jobs = want
	if t.sub != nil {
		return
	}
	t.prefix = TriggerSubjectPrefix(cfg)
	sub, err := nc.QueueSubscribe(t.prefix+">", triggerQueue, t.dispatch)
	if err != nil {
		t.log.Error().Err(err).Msg("cannot take trigger requests; other replicas may")
		return
	}
	t.sub = sub
}

// stop unsubscribes, for a shutdown: from then on the other replicas take
// the requests. Runs already started go on.
func (t *triggerServer) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopped = true
	if t.sub == nil {
		return
	}
	if err := t.sub.Unsubscribe(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		t.log.Warn().Err(err).Msg("cannot stop taking trigger requests")
	}
	t.sub = nil
}

// dispatch hands a request to a goroutine serving its job (counted in runs,
// which the daemon waits for), or refuses it for a job this replica does
// not take. NATS calls it serially, so it must not block.
func (t *triggerServer) dispatch(m *nats.Msg) {
	name := strings.TrimPrefix(m.Subject, t.prefix)
	t.mu.Lock()
	switch {
	case t.stopped:
		t.mu.Unlock()
		t.reply(m, name, TriggerReply{Status: TriggerRefused, Error: "replica shutting down"})
		return
	case !t.jobs[name] && !t.d.runtimeJob(name):
		t.mu.Unlock()
		t.reply(m, name, TriggerReply{Status: TriggerRefused, Error: errNotTaken.Error()})
		return
	}
	turn := t.serving[name]
	if turn == nil {
		turn = &jobTurn{}
		t.serving[name] = turn
	}
	turn.waiters++
	t.runs.Add(1) // under t.mu, before stop: the daemon's Wait follows stop
	t.mu.Unlock()
	go func() {
		defer t.runs.Done()
		turn.mu.Lock()
		t.handle(m, name)
		turn.mu.Unlock()
		t.mu.Lock()
		if turn.waiters--; turn.waiters == 0 {
			delete(t.serving, name)
		}
		t.mu.Unlock()
	}()
}

// errNotTaken is the refusal of a request for a job this replica does not
// take: the client asks again, and another replica may take it.
var errNotTaken = errors.New("this replica does not have the job configured, or its configuration suspends it")

// handle answers one request for job name; dispatch runs one at a time
// per job on a replica, so two requests for one job do not race.
func (t *triggerServer) handle(m *nats.Msg, name string) {
	var req TriggerRequest
	if err := json.Unmarshal(m.Data, &req); err != nil {
		t.reply(m, name, TriggerReply{Status: TriggerError, Error: "bad trigger request: " + err.Error()})
		return
	}
	log := t.log.With().Str("job", name).Str("by", req.By).Logger()
	t.reply(m, name, t.start(name, log))
}

// start starts a manual run of job name and returns the answer to send
// once it has started or could not.
func (t *triggerServer) start(name string, log zerolog.Logger) TriggerReply {
	t.mu.Lock()
	stopped := t.stopped
	t.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), triggerLookup)
	defer cancel()
	st, err := t.d.web.known(ctx, name)
	switch {
	case stopped || t.d.schedCtx.Err() != nil:
		return TriggerReply{Status: TriggerRefused, Error: "replica shutting down"}
	case err != nil:
		return TriggerReply{Status: TriggerRefused, Error: err.Error()}
	case !st.sched.RunsHere(name): // ask again: another replica may match
		return TriggerReply{Status: TriggerRefused, Error: scheduler.ErrNotPlaced.Error()}
	}
	h, err := st.holder(ctx, name)
	if err == nil {
		return TriggerReply{Status: TriggerBusy, Holder: h.Owner, Token: h.Token, Error: busy(name, h).Error()}
	} else if !errors.Is(err, lock.ErrNotHeld) {
		return TriggerReply{Status: TriggerError, Error: err.Error()}
	}
	started := make(chan scheduler.Run, 1)
	done := make(chan error, 1)
	t.runs.Go(func() {
		// Not bound to the request: the run outlives it. The scheduler
		// cancels it when its shutdown grace is over.
		run, err := st.sched.TriggerRun(context.Background(), name, func(r scheduler.Run) { started <- r })
		done <- err
		logResult(log, run, err)
	})
	select {
	case r := <-started:
		log.Info().Uint64("run", r.ID).Uint64("token", r.Token).Msg("manual run requested over NATS started")
		return TriggerReply{Status: TriggerStarted, Run: &r}
	case err := <-done:
		select {
		case r := <-started: // it started and ended already
			return TriggerReply{Status: TriggerStarted, Run: &r}
		default:
			return t.notStarted(st, name, err)
		}
	}
}

// notStarted is the answer for a run that ended before it started.
func (t *triggerServer) notStarted(st webState, name string, err error) TriggerReply {
	switch {
	case errors.Is(err, scheduler.ErrShutdown):
		return TriggerReply{Status: TriggerRefused, Error: "replica shutting down"}
	case errors.Is(err, lock.ErrNotAcquired):
		ctx, cancel := context.WithTimeout(context.Background(), triggerLookup)
		defer cancel()
		if h, herr := st.holder(ctx, name); herr == nil {
			return TriggerReply{Status: TriggerBusy, Holder: h.Owner, Token: h.Token, Error: busy(name, h).Error()}
		}
		return TriggerReply{Status: TriggerBusy, Error: err.Error()}
	}
	return TriggerReply{Status: TriggerError, Error: err.Error()}
}

// logResult logs how a run requested over NATS ended.
func logResult(log zerolog.Logger, run scheduler.Run, err error) {
	switch {
	case run.ID == 0: // it never started; the reply said why
	case err != nil:
		log.Warn().Uint64("run", run.ID).Str("status", string(run.Status)).Msg("manual run requested over NATS did not succeed")
	default:
		log.Info().Uint64("run", run.ID).Msg("manual run requested over NATS succeeded")
	}
}

func (t *triggerServer) reply(m *nats.Msg, name string, r TriggerReply) {
	b, err := json.Marshal(r)
	if err == nil {
		err = m.Respond(b)
	}
	if err != nil {
		t.log.Warn().Err(err).Str("job", name).Str("status", r.Status).Msg("cannot answer a trigger request")
	}
}

// errTriggerReply is an answer a client cannot read.
var errTriggerReply = errors.New("unreadable answer to a trigger request")

// parseTriggerReply decodes a replica's answer.
func parseTriggerReply(data []byte) (TriggerReply, error) {
	var r TriggerReply
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("%w: %w", errTriggerReply, err)
	}
	if r.Status == TriggerStarted && r.Run == nil {
		return r, fmt.Errorf("%w: started without a run", errTriggerReply)
	}
	return r, nil
}
