package job

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Job is one scheduled unit of work.
//
// Every replica runs the same set of Jobs; for each tick of Schedule the
// replica that wins the lock named Name calls Run. The zero value is not a
// valid Job; call Validate before scheduling one.
type Job struct {
	// Name identifies the job. It must be unique, and it is used verbatim as
	// the lock key, so it must satisfy ValidateName.
	Name string
	// Schedule is a cron spec: 5 fields, or 6 with leading seconds
	// ("0 */5 * * * *"), descriptors (@hourly, @daily, @every 90s, ...), with
	// an optional CRON_TZ=/TZ= prefix. See ParseSchedule.
	Schedule string
	// Calendar, when not nil, adds to the schedule: several specs instead
	// of Schedule, days without ticks, a start and an end, or instead of
	// any spec a one-off's single tick (see Calendar).
	// A pointer, so that a job without one costs 8 bytes instead of 96: a
	// replica holds 100,000 jobs.
	Calendar *Calendar
	// Location is the zone in which Schedule's fields are read; nil means
	// UTC. A CRON_TZ=/TZ= prefix in Schedule overrides it.
	Location *time.Location
	// Run does the work. Its context carries a RunInfo (see FromContext)
	// and is cancelled when the attempt must stop, e.g. when Timeout
	// expires.
	Run func(ctx context.Context) error
	// Timeout bounds each attempt; 0 means none.
	Timeout time.Duration
	// Retries is the number of extra attempts within the same tick, made
	// while still holding the lock, after Run returns an error.
	Retries int
	// RetryBackoff is the pause before each retry.
	RetryBackoff time.Duration
	// StartingDeadline is the catch-up window: a tick that no replica ran
	// (all were down, or none could reach NATS) is still run, once, if it
	// is at most this old; 0 means no catch-up.
	StartingDeadline time.Duration
	// OnInterrupt says what happens to a tick whose run was interrupted: by
	// a shutdown (after the scheduler's grace) or by the loss of its lease.
	// A failure or a timeout of the job itself is not an interruption.
	OnInterrupt Interrupt
	// Jitter, when positive, delays each tick's run by a duration in
	// [0, Jitter) derived from the job's name and the tick (TickJitter): the
	// same on every replica, different across jobs, so a fleet of jobs on
	// one schedule does not start at the same instant.
	Jitter time.Duration
	// Suspended jobs start no run at their ticks, whatever the shared
	// suspension state says; Trigger still runs them.
	Suspended bool
	// SuspendAfterFailures, when positive, suspends the job for every
	// replica (as History.Suspend does) once this many of its runs in a row
	// have failed (RunStatus.Failed); a success, or a resume, starts the
	// count again. 0: never.
	SuspendAfterFailures int
	// Overlap is what a tick that comes while the job runs does (see
	// Overlap); the zero value skips it.
	Overlap Overlap
	// MaxParallel bounds the job's runs at once under OverlapAllow (0 is
	// 1); any other policy runs one at a time, and a value above 1 is an
	// error there.
	MaxParallel int
	// Group, when named, limits the runs of its jobs at once across all
	// replicas (see Group): a tick that finds the group full waits for a
	// slot until StartingDeadline after the tick (not at all without one)
	// and is then recorded missed with reason group_full.
	Group Group
	// RunOn says whether a tick runs on one replica (the zero value) or on
	// every live replica (see RunOn).
	RunOn RunOn
	// OnReplicas, when not empty, restricts the job to the replicas whose
	// labels (scheduler.Options.ReplicaLabels) have every one of its
	// pairs: another replica never tries its ticks, and a tick at which no
	// matching replica is live is recorded missed with reason no_replica.
	OnReplicas map[string]string
	// Definition identifies what Run does, such as a hash of the command
	// it runs: the scheduler writes it with each claim of the job's ticks
	// and reports a claim written under another Definition (another
	// deployment on the same buckets, or replicas with different code or
	// configurations). At most 128 characters of visible ASCII. Empty (the
	// default): the job has none, and nothing is compared.
	Definition string
}

// Interrupt is a job's policy for interrupted runs (Job.OnInterrupt).
type Interrupt int

const (
	// InterruptSkip records an interrupted run and leaves its tick: the
	// next run is at the next tick.
	InterruptSkip Interrupt = iota
	// InterruptRerun records an interrupted run as interrupted and runs
	// the same tick again on whichever replica takes the lock next (the
	// same one after a restart, or another), with the attempt count going
	// on. A rerun happens only until the job's next tick is due; the
	// tick's MaxInterruptions-th interruption is recorded failed (so a tick
	// is rerun at most MaxInterruptions-1 times).
	InterruptRerun
)

// MaxInterruptions bounds the interruptions of one tick of an
// InterruptRerun job: the last one is recorded failed, not rerun.
const MaxInterruptions = 3

func (i Interrupt) String() string {
	switch i {
	case InterruptSkip:
		return "skip"
	case InterruptRerun:
		return "rerun"
	}
	return fmt.Sprintf("Interrupt(%d)", int(i))
}

// Validate reports every problem with j, joined (errors.Join), or nil. Each
// error names the job and the field, e.g. `job "x": schedule "61 * * * *":
// ...` or `job "x": timeout: must not be negative, got -1s`. Settings are
// bounded above too (MaxRetries, MaxTimeout, ...; the jitter also by the
// schedule's ShortestInterval). A bad name is
// reported by ValidateName's error, which names it.
func (j Job) Validate() error {
	s, err := j.ParsedSchedule()
	return j.validate(s, err)
}

// ValidateParsed is Validate for a job whose schedule was parsed already:
// s is what j.ParsedSchedule returned (a Schedule is immutable, so one
// parse can serve the jobs that share a spec and location). It saves the
// parse, most of Validate's time.
func (j Job) ValidateParsed(s Schedule) error {
	if s == nil {
		return j.Validate()
	}
	return j.validate(s, nil)
}

// validate is Validate with the schedule's parse, s or err, done.
func (j Job) validate(s Schedule, err error) error {
	var errs []error
	add := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("job %s: "+format, append([]any{quote(j.Name)}, args...)...))
	}
	if err := ValidateName(j.Name); err != nil {
		errs = append(errs, err)
	}
	if err != nil {
		s = nil
		add("%w", err)
	} else if NeverFires(s) {
		add("schedule %s never fires: no calendar date matches its day and month fields", quote(j.Spec()))
	}
	if j.Run == nil {
		add("run: must not be nil")
	}
	for _, d := range []struct {
		field string
		value time.Duration
	}{
		{"timeout", j.Timeout},
		{"retryBackoff", j.RetryBackoff},
		{"startingDeadline", j.StartingDeadline},
	} {
		if d.value < 0 {
			add("%s: must not be negative, got %v", d.field, d.value)
		}
	}
	if j.Retries < 0 {
		add("retries: must not be negative, got %d", j.Retries)
	}
	if j.SuspendAfterFailures < 0 {
		add("suspendAfterFailures: must not be negative, got %d", j.SuspendAfterFailures)
	}
	if j.Overlap < OverlapSkip || j.Overlap > OverlapAllow {
		add("overlap: unknown policy %v", j.Overlap)
	}
	switch {
	case j.MaxParallel < 0 || j.MaxParallel > MaxMaxParallel:
		add("maxParallel: must be between 1 and %d, got %d", MaxMaxParallel, j.MaxParallel)
	case j.MaxParallel > 1 && j.Overlap != OverlapAllow:
		add("maxParallel: %d runs at once need overlap allow (the job's policy is %v)", j.MaxParallel, j.Overlap)
	}
	if err := j.Group.validate(); err != nil {
		add("%v", err)
	}
	if j.RunOn != RunOnOne && j.RunOn != RunOnEveryReplica {
		add("runOn: unknown setting %v", j.RunOn)
	}
	if err := ValidateLabels(j.OnReplicas); err != nil {
		add("onReplicas: %v", err)
	}
	if j.Jitter < 0 {
		add("jitter: must not be negative, got %v", j.Jitter)
	}
	if j.OnInterrupt != InterruptSkip && j.OnInterrupt != InterruptRerun {
		add("onInterrupt: unknown policy %v", j.OnInterrupt)
	}
	for _, e := range j.boundsErrors(s) {
		add("%s", e)
	}
	return errors.Join(errs...)
}
