package scheduler

import (
	"context"
	"fmt"
)

// Trigger starts a run of the job now, outside its schedule, under its
// lock, and returns the run's entry as recorded in the shared history when
// it started (running, manual, with its ID, Tick, Owner and Token). It
// claims no tick, and it runs even while the job is suspended. ctx bounds
// taking the lock and recording the start; the run goes on after Trigger
// returns, like a scheduled run: its result is recorded in the history and
// given to Options.OnResult, and Run's shutdown waits for it (and cancels
// it after ShutdownGrace). To wait for the result, use TriggerRun.
//
// Errors (a zero Run): ErrUnknownJob, ErrStopped, lock.ErrNotAcquired when
// a run of the job holds its lock (here or on another replica), or the
// error of NATS.
func (s *Scheduler) Trigger(ctx context.Context, name string) (Run, error) {
	m, err := s.startManual(ctx, name)
	if err != nil {
		return Run{}, err
	}
	go s.runManual(context.Background(), m)
	return m.run, nil
}

// TriggerRun is Trigger that waits for the run: started, when not nil, is
// called with the run's entry once it holds the lock and is recorded in the
// history (as Trigger returns it), before the job starts; it must not
// block. TriggerRun returns the finished run (its status, error, exit code
// and output tail) and an error unless it succeeded. ctx also cancels the
// run (recorded cancelled). A run that could not start returns a zero Run
// and Trigger's errors.
func (s *Scheduler) TriggerRun(ctx context.Context, name string, started func(Run)) (Run, error) {
	m, err := s.startManual(ctx, name)
	if err != nil {
		return Run{}, err
	}
	if started != nil {
		started(m.run)
	}
	run := s.runManual(ctx, m)
	if run.Status != StatusSucceeded {
		return run, fmt.Errorf("scheduler: Trigger %q: %s: %s", name, run.Status, run.Error)
	}
	return run, nil
}

// manualRun is a manual run that holds its job's lock and is recorded as
// started.
type manualRun struct {
	e     *entry
	lease *heldLock
	run   Run
}

// startManual takes the job's lock and records the manual run's start. On
// success the run counts in s.runs until runManual ends it.
func (s *Scheduler) startManual(ctx context.Context, name string) (manualRun, error) {
	if err := s.awaitReplicas(ctx); err != nil {
		return manualRun{}, fmt.Errorf("scheduler: Trigger %q: %w", name, err)
	}
	e, err := s.beginManual(name)
	if err != nil {
		return manualRun{}, err
	}
	now := s.now()
	run := Run{Job: name, Tick: now, Manual: true, Start: now, Status: StatusRunning}
	var recorded Run
	res, err := s.take(ctx, takeRequest{name: name, timeout: s.opts.AcquireTimeout,
		change: manualChange(run, e.job.Definition, &recorded)})
	if err != nil {
		s.runs.Done()
		return manualRun{}, fmt.Errorf("scheduler: Trigger %q: %w", name, err)
	}
	lease := res.lock
	run = recorded
	return manualRun{e: e, lease: lease, run: run}, nil
}

// beginManual finds the job to trigger and counts its run in s.runs,
// unless the scheduler is stopping (ErrStopped, also once its jobs are
// gone), has no such job (ErrUnknownJob) or may not run it here
// (ErrNotPlaced).
func (s *Scheduler) beginManual(name string) (*entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return nil, fmt.Errorf("scheduler: Trigger %q: %w", name, ErrStopped)
	}

	e, _, ok := s.entryNamed(name)
	if !ok {
		return nil, fmt.Errorf("scheduler: Trigger: %w %q", ErrUnknownJob, name)
	}
	if !s.matchesHere(e) {
		return nil, fmt.Errorf("scheduler: Trigger %q: %w", name, ErrNotPlaced)
	}
	s.runs.Add(1)
	return e, nil
}

// runManual runs a started manual run under ctx (and the shutdown's hard
// stop), records its result, releases its lock and returns the finished
// run.
func (s *Scheduler) runManual(ctx context.Context, m manualRun) Run {
	defer s.runs.Done()
	defer s.release(m.lease)
	parent, stop := context.WithCancel(ctx)
	defer stop()
	unhook := context.AfterFunc(s.hard, stop)
	defer unhook()
	run := m.run
	log := s.log.With().Str("job", run.Job).Time("tick", run.Tick).Bool("manual", true).Str("owner", run.Owner).Uint64("token", run.Token).Logger()
	s.runInGroup(parent, m.e, &run, m.lease, log)
	return run
}
