package scheduler

import (
	"context"
	"fmt"
	"time"
)

// manualRecordTimeout bounds recording a manual run's start in the history.
const manualRecordTimeout = 5 * time.Second

// Trigger runs the job once now, outside its schedule, under its lock, and
// returns the run's error. The run is recorded in the shared history as
// manual; it claims no tick, and it runs even while the job is suspended.
// ctx bounds the acquisition and cancels the run. Errors:
// lock.ErrNotAcquired (wrapped) if the job is running elsewhere.
func (s *Scheduler) Trigger(ctx context.Context, name string) error {
	_, err := s.TriggerRun(ctx, name, nil)
	return err
}

// TriggerRun is Trigger that also reports the run: started, when not nil,
// is called with the run's entry once it holds the lock and is recorded in
// the history (its ID, Owner and Token set), before the job starts; it
// must not block. TriggerRun returns the finished run (its status, error,
// exit code and output tail) and, as Trigger, an error unless it
// succeeded. A run that could not start returns a zero Run.
func (s *Scheduler) TriggerRun(ctx context.Context, name string, started func(Run)) (Run, error) {
	e, ok := s.lookup(name)
	if !ok {
		return Run{}, fmt.Errorf("scheduler: Trigger: no job %q", name)
	}
	if !s.beginRun() {
		return Run{}, fmt.Errorf("scheduler: Trigger %q: %w", name, errShutdown)
	}
	defer s.runs.Done()
	lease, err := s.acquire(ctx, name, s.opts.AcquireTimeout)
	if err != nil {
		return Run{}, fmt.Errorf("scheduler: Trigger %q: %w", name, err)
	}
	defer s.release(lease)
	now := s.now()
	run := Run{Job: name, Tick: now, Manual: true, Owner: lease.Owner(), Token: lease.Token(), Start: now, Status: StatusRunning,
		definition: e.job.Definition}
	rctx, cancel := context.WithTimeout(ctx, manualRecordTimeout)
	run, err = s.history.addManual(rctx, run)
	cancel()
	if err != nil {
		return Run{}, fmt.Errorf("scheduler: Trigger %q: record: %w", name, err)
	}
	if started != nil {
		started(run)
	}
	parent, stop := context.WithCancel(ctx)
	defer stop()
	unhook := context.AfterFunc(s.hard, stop)
	defer unhook()
	log := s.log.With().Str("job", name).Time("tick", now).Bool("manual", true).Str("owner", lease.Owner()).Uint64("token", lease.Token()).Logger()
	s.execute(parent, e, &run, lease, nil, log)
	if run.Status != StatusSucceeded {
		return run, fmt.Errorf("scheduler: Trigger %q: %s: %s", name, run.Status, run.Error)
	}
	return run, nil
}

// ErrShutdown is matched by the error of a Trigger made while the
// scheduler shuts down.
var ErrShutdown = errShutdown
