package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cronlock/cronlock/internal/jobstore"
	"github.com/cronlock/cronlock/job"
)

// Runtime jobs are jobs defined at run time: their definitions live in a
// KV bucket that every replica follows (FollowRuntimeJobs), so a service
// can give each of its customers a schedule that every replica of the
// service runs exactly once per tick. The cronlock binary's runtime jobs
// are the same bucket and format: a definition names a kind (what it runs,
// given by the code or the binary's configuration) and carries a payload.

// RuntimeJob is one job defined at run time. Its JSON form is the stored
// format, the one the cronlock binary reads too: the keys of a
// configuration file's job, durations as strings ("90s").
type RuntimeJob struct {
	Name string `json:"name"`
	// Schedule or Schedules (their union) say when it runs; Timezone (an
	// IANA name, "" for UTC) is where they are read.
	Schedule  string   `json:"schedule,omitempty"`
	Schedules []string `json:"schedules,omitempty"`
	// At, instead of a schedule, is a one-off's instant: it runs once.
	// Its definition stays after the run (the binary's after_run: delete
	// is not applied here): delete it when done with it.
	At       time.Time `json:"at,omitzero"`
	Timezone string    `json:"timezone,omitempty"`
	// ExcludeDates ("YYYY-MM-DD" in Timezone), StartAt and EndAt are
	// job.Calendar's, with a Schedule or Schedules.
	ExcludeDates []string  `json:"exclude_dates,omitempty"`
	StartAt      time.Time `json:"start_at,omitzero"`
	EndAt        time.Time `json:"end_at,omitzero"`
	// Kind names the function the job runs (Kinds); Payload, a JSON
	// object of at most MaxPayload bytes, is what it runs on
	// (job.Payload in the run's context).
	Kind    string          `json:"kind"`
	Payload json.RawMessage `json:"payload,omitempty"`
	// The rest are job.Job's.
	Timeout          Duration `json:"timeout,omitempty"`
	Retries          int      `json:"retries,omitempty"`
	RetryBackoff     Duration `json:"retry_backoff,omitempty"`
	StartingDeadline Duration `json:"starting_deadline,omitempty"`
	Jitter           Duration `json:"jitter,omitempty"`
	Suspended        bool     `json:"suspended,omitempty"`
}

// MaxPayload is the largest RuntimeJob.Payload.
const MaxPayload = 64 << 10

// Duration is a time.Duration written in JSON as a string ("90s").
type Duration time.Duration

// MarshalJSON writes d as time.Duration.String does.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a string that time.ParseDuration accepts.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration must be a string such as \"90s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// StoredRuntimeJob is a RuntimeJob as the bucket holds it.
type StoredRuntimeJob struct {
	RuntimeJob
	Revision uint64    // the ETag of a change that requires it (IfMatch)
	By       string    // who put it
	At       time.Time // when
}

// Errors of RuntimeJobs callers match.
var (
	ErrRuntimeJobNotFound = jobstore.ErrNotFound
	ErrRevisionMismatch   = jobstore.ErrRevision
)

// RuntimeJobsOptions configure OpenRuntimeJobs. The zero value works.
type RuntimeJobsOptions struct {
	// Bucket is the KV bucket. Default DefaultRuntimeJobsBucket.
	Bucket string
	// Replicas is the replication factor when the bucket is created.
	// Default 1; use 3 on a 3-node cluster.
	Replicas int
}

// DefaultRuntimeJobsBucket is the bucket of RuntimeJobsOptions without one,
// the binary's default too.
const DefaultRuntimeJobsBucket = "cronlock_jobs"

// RuntimeJobs is the bucket of runtime job definitions. Safe for
// concurrent use.
type RuntimeJobs struct {
	store *jobstore.Store
	name  string
}

// OpenRuntimeJobs opens the runtime jobs' bucket, creating it when missing.
func OpenRuntimeJobs(ctx context.Context, js jetstream.JetStream, opts RuntimeJobsOptions) (*RuntimeJobs, error) {
	if opts.Bucket == "" {
		opts.Bucket = DefaultRuntimeJobsBucket
	}
	st, err := jobstore.Open(ctx, js, opts.Bucket, max(opts.Replicas, 1))
	if err != nil {
		return nil, err
	}
	return &RuntimeJobs{store: st, name: opts.Bucket}, nil
}

// ChangeOption qualifies a Put or a Delete.
type ChangeOption func(*change)

type change struct {
	ifMatch uint64
	by      string
}

// IfMatch makes the change require the stored revision to be rev
// (ErrRevisionMismatch otherwise).
func IfMatch(rev uint64) ChangeOption { return func(c *change) { c.ifMatch = rev } }

// By records who made the change (default: "go@" and the host name).
func By(who string) ChangeOption { return func(c *change) { c.by = who } }

func changeOf(opts []ChangeOption) change {
	c := change{}
	for _, o := range opts {
		o(&c)
	}
	if c.by == "" {
		host, _ := os.Hostname()
		c.by = "go@" + host
	}
	return c
}

// Put validates j (its name, schedule, zone, kind and payload) and stores
// it, creating or replacing the job: every following replica schedules the
// change within its watch's delivery. It returns the new revision.
func (r *RuntimeJobs) Put(ctx context.Context, j RuntimeJob, opts ...ChangeOption) (uint64, error) {
	if _, err := j.jobFor(func(context.Context) error { return nil }); err != nil {
		return 0, err
	}
	data, err := json.Marshal(j)
	if err != nil {
		return 0, err
	}
	c := changeOf(opts)
	return r.store.Put(ctx, j.Name, data, c.ifMatch, c.by)
}

// Delete removes the runtime job name (its runs' history stays). It
// returns the delete's revision, or ErrRuntimeJobNotFound.
func (r *RuntimeJobs) Delete(ctx context.Context, name string, opts ...ChangeOption) (uint64, error) {
	c := changeOf(opts)
	return r.store.Delete(ctx, name, c.ifMatch, c.by)
}

// Get returns the runtime job name, or ErrRuntimeJobNotFound.
func (r *RuntimeJobs) Get(ctx context.Context, name string) (StoredRuntimeJob, error) {
	st, err := r.store.Get(ctx, name)
	if err != nil {
		return StoredRuntimeJob{}, err
	}
	return decodeRuntimeJob(st)
}

// List returns up to limit runtime jobs (0: all) whose names sort after
// after, by name, and the after of the next page ("" when none follows).
func (r *RuntimeJobs) List(ctx context.Context, after string, limit int) ([]StoredRuntimeJob, string, error) {
	names, err := r.store.Names(ctx)
	if err != nil {
		return nil, "", err
	}
	var out []StoredRuntimeJob
	next := ""
	for _, n := range names {
		if n <= after {
			continue
		}
		if limit > 0 && len(out) == limit {
			next = out[len(out)-1].Name
			break
		}
		j, err := r.Get(ctx, n)
		if errors.Is(err, ErrRuntimeJobNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, "", err
		}
		out = append(out, j)
	}
	return out, next, nil
}

func decodeRuntimeJob(st jobstore.Stored) (StoredRuntimeJob, error) {
	out := StoredRuntimeJob{Revision: st.Revision, By: st.By, At: st.At}
	if err := json.Unmarshal(st.Definition, &out.RuntimeJob); err != nil {
		return StoredRuntimeJob{}, fmt.Errorf("runtime job %q revision %d: %w", st.Name, st.Revision, err)
	}
	return out, nil
}

// jobFor is j as a job.Job running run, validated.
func (j RuntimeJob) jobFor(run func(context.Context) error) (job.Job, error) {
	if j.Kind == "" {
		return job.Job{}, fmt.Errorf("runtime job %q: kind: is required", j.Name)
	}
	if len(j.Payload) > MaxPayload {
		return job.Job{}, fmt.Errorf("runtime job %q: payload: %d bytes, more than %d", j.Name, len(j.Payload), MaxPayload)
	}
	if len(j.Payload) > 0 {
		var obj map[string]any
		if err := json.Unmarshal(j.Payload, &obj); err != nil {
			return job.Job{}, fmt.Errorf("runtime job %q: payload: must be a JSON object: %w", j.Name, err)
		}
	}
	loc := time.UTC
	if j.Timezone != "" {
		l, err := job.LoadZone(j.Timezone)
		if err != nil {
			return job.Job{}, fmt.Errorf("runtime job %q: timezone: %w", j.Name, err)
		}
		loc = l
	}
	payload := j.Payload
	out := job.Job{
		Name: j.Name, Schedule: j.Schedule, Location: loc,
		Timeout: time.Duration(j.Timeout), Retries: j.Retries, RetryBackoff: time.Duration(j.RetryBackoff),
		StartingDeadline: time.Duration(j.StartingDeadline), Jitter: time.Duration(j.Jitter), Suspended: j.Suspended,
		Run: func(ctx context.Context) error { return run(job.WithPayload(ctx, payload)) },
	}
	if cal, err := j.calendar(); err != nil {
		return job.Job{}, err
	} else if cal != nil {
		out.Calendar = cal
	}
	if err := out.Validate(); err != nil {
		return job.Job{}, err
	}
	return out, nil
}

// calendar is j's job.Calendar, nil when it has only a Schedule.
func (j RuntimeJob) calendar() (*job.Calendar, error) {
	if j.At.IsZero() && len(j.Schedules) == 0 && len(j.ExcludeDates) == 0 && j.StartAt.IsZero() && j.EndAt.IsZero() {
		return nil, nil
	}
	cal := &job.Calendar{At: j.At, Schedules: j.Schedules, StartAt: j.StartAt, EndAt: j.EndAt}
	for i, s := range j.ExcludeDates {
		d, err := job.ParseDate(s)
		if err != nil {
			return nil, fmt.Errorf("runtime job %q: exclude_dates[%d]: %w", j.Name, i, err)
		}
		cal.ExcludeDates = append(cal.ExcludeDates, d)
	}
	return cal, nil
}
