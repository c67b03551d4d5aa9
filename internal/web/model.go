package web

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sort"
	"strings"
	"time"
)

// ErrNotFound is what a Source returns (possibly wrapped) for a job name it
// does not know; the handler answers 404 for it.
var ErrNotFound = errors.New("no such job")

// ErrUnavailable is what a Source returns (wrapped, with a short text
// saying why, such as "cronlock is starting: connecting to nats://...")
// while it cannot answer at all: the daemon is starting or stopping. The
// page and the API answer 503 with the error's text, and the handler logs
// each change of that text once, not each request.
var ErrUnavailable = errors.New("unavailable")

// Source is where the page and the API get their data and send their
// actions. The daemon implements it over its scheduler and the shared KV
// buckets; tests implement it in memory. Methods are called concurrently, once
// per request, so they should be cheap enough to run every second per viewer.
type Source interface {
	// Jobs returns the jobs q selects (see JobQuery; SelectJobs does the
	// selecting) and how many jobs of q.Source there are. Its cost should
	// follow the jobs it returns, not the jobs configured: the page asks
	// for a window of a large configuration every second.
	Jobs(ctx context.Context, q JobQuery) (JobList, error)
	// Job returns one job with its lock and its last runs, newest first.
	Job(ctx context.Context, name string) (JobDetail, error)
	// Replicas returns the live replicas.
	Replicas(ctx context.Context) ([]Replica, error)
	// Trigger starts a manual run of the job now.
	Trigger(ctx context.Context, name string) error
	// Suspend stops scheduling the job on every replica.
	Suspend(ctx context.Context, name string) error
	// Resume schedules a suspended job again on every replica.
	Resume(ctx context.Context, name string) error
	// Cancel stops the job's running run wherever it runs; an error
	// matching ErrConflict when it runs nothing.
	Cancel(ctx context.Context, name string) error
	// Backfill starts (dryRun: lists) a backfill of the job's ticks in
	// [from, to] that have no run, and returns them; a *DefinitionError
	// for a range it refuses, ErrConflict while one is in progress.
	Backfill(ctx context.Context, name string, from, to time.Time, by string, dryRun bool) ([]time.Time, error)
}

// JobQuery selects jobs: those defined in Source ("file", "runtime"; ""
// all) whose names contain Match ("" any), in the order the page shows
// them; with After or Limit, sorted by name instead, the first Limit of
// them (0: all) whose names sort after After.
type JobQuery struct {
	Source, After, Match string
	Limit                int
}

// Matches reports whether the job of ref is one q's Source and Match
// select (After and Limit aside).
func (q JobQuery) Matches(ref JobRef) bool {
	return (q.Source == "" || ref.Source == q.Source) && strings.Contains(ref.Name, q.Match)
}

// windowed reports whether q asks for jobs sorted by name.
func (q JobQuery) windowed() bool { return q.After != "" || q.Limit > 0 }

// JobList is the answer to a JobQuery: the jobs; Total, how many jobs of
// the query's Source and Match there are in all; and Before, how many of
// those sort before the first of Jobs (those at or before After).
type JobList struct {
	Jobs          []Job
	Total, Before int
}

// JobSelection is what SelectJobs selects: the refs, and the counts of a
// JobList.
type JobSelection struct {
	Refs          []JobRef
	Total, Before int
}

// JobRef is a job's name and where it is defined (Job.Source): what
// SelectJobs selects from. Index is the Source's own, for finding the job
// again; SelectJobs keeps it.
type JobRef struct {
	Name, Source string
	Index        int
}

// SelectJobs returns the refs, given in the page's order, that q selects,
// in q's order, with the counts of a JobList.
func SelectJobs(refs []JobRef, q JobQuery) JobSelection {
	out := refs[:0:0]
	for _, r := range refs {
		if q.Matches(r) {
			out = append(out, r)
		}
	}
	sel := JobSelection{Refs: out, Total: len(out)}
	if !q.windowed() {
		return sel
	}
	slices.SortStableFunc(out, func(a, b JobRef) int { return strings.Compare(a.Name, b.Name) })
	if q.After != "" {
		sel.Before = sort.Search(len(out), func(i int) bool { return out[i].Name > q.After })
		out = out[sel.Before:]
	}
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[:q.Limit]
	}
	sel.Refs = out
	return sel
}

// Job is one configured job as the job list shows it. Its JSON form is part
// of the public API: fields are only ever added, never renamed.
type Job struct {
	Name string `json:"name"`
	// Source is where the job is defined: "file" (the configuration file)
	// or "runtime" (the runtime jobs' bucket).
	Source   string `json:"source"`
	Schedule string `json:"schedule"`
	Timezone string `json:"timezone"`
	// Next is the next scheduled tick; absent when there is none (suspended,
	// or a schedule that never fires again).
	Next time.Time `json:"next,omitzero"`
	// Ended is set for a job that will not tick again because its end_at,
	// or a one-off's at, has passed: that instant. Absent otherwise.
	Ended     time.Time `json:"ended,omitzero"`
	Suspended bool      `json:"suspended"`
	// LastStatus is the status of the newest run ("" when it never ran):
	// running, succeeded, failed, timeout, lost, cancelled, missed, abandoned.
	LastStatus          string    `json:"last_status"`
	LastStart           time.Time `json:"last_start,omitzero"`
	LastEnd             time.Time `json:"last_end,omitzero"`
	LastDurationSeconds float64   `json:"last_duration_seconds"`
	// Running is true while a replica holds the job's lock and runs it;
	// Holder (the replica's owner id) and Token (the lock's fencing token)
	// are set only then.
	Running bool   `json:"running"`
	Holder  string `json:"holder,omitempty"`
	Token   uint64 `json:"token,omitempty"`
	// State is "corrupt" when the job's record in the shared history is not
	// a job state (Error says why; the last run and runs are then unknown):
	// a running replica repairs it at the job's next tick. Absent otherwise.
	State string `json:"state,omitempty"`
	Error string `json:"error,omitempty"`
	// OtherDefinition, when set, is the definition hash of the job's last
	// claim, which is not this configuration's: the runs shown are another
	// definition's (another deployment on the same buckets, or replicas
	// with another configuration).
	OtherDefinition string `json:"other_definition,omitempty"`
	// The history at a glance (glance.go): the newest runs, the success
	// rate among them, who ran the newest, and the next tick in the job's
	// own time zone.
	RecentRuns  []RecentRun `json:"recent_runs"`
	SuccessRate *float64    `json:"success_rate"`
	LastOwner   string      `json:"last_owner,omitempty"`
	NextLocal   string      `json:"next_local,omitempty"`
}

// StateCorrupt is Job.State for a job whose shared record is corrupt.
const StateCorrupt = "corrupt"

// JobDetail is one job with its lock and recent runs (GET /api/jobs/{name}).
type JobDetail struct {
	Job
	// Lock is the job's lock, or nil (JSON null) when nobody holds it.
	Lock *Lock `json:"lock"`
	// Runs are the last runs kept in the shared history, newest first.
	Runs []Run `json:"runs"`
	// Definition and Revision are a runtime job's stored definition and its
	// revision (the ETag); absent for file jobs.
	Definition json.RawMessage `json:"definition,omitempty"`
	Revision   uint64          `json:"revision,omitempty"`
	// Settings is how the job runs, for the job view (glance.go); nil
	// (absent) when the source does not say.
	Settings *Settings `json:"settings,omitempty"`
	// Backfill is the job's backfill in progress; absent if none.
	Backfill *Backfill `json:"backfill,omitempty"`
}

// Backfill is a backfill in progress: Done of Total ticks started, from
// From to To, the next one considered at or after Next.
type Backfill struct {
	From  time.Time `json:"from"`
	To    time.Time `json:"to"`
	Next  time.Time `json:"next"`
	Total int       `json:"total"`
	Done  int       `json:"done"`
	By    string    `json:"by,omitempty"`
}

// Run is one run (or missed tick) of a job.
type Run struct {
	Tick            time.Time `json:"tick"`
	Status          string    `json:"status"`
	Attempts        int       `json:"attempts"`
	Start           time.Time `json:"start,omitzero"`
	End             time.Time `json:"end,omitzero"`
	DurationSeconds float64   `json:"duration_seconds"`
	// ExitCode is the command's exit status; nil (JSON null) when the run
	// has no process exit (still running, missed, in-process job, killed).
	ExitCode *int `json:"exit_code"`
	// Output is the tail of the command's combined stdout and stderr, as the
	// job printed it: display it as text, never as markup.
	Output string `json:"output"`
	Error  string `json:"error"`
	Owner  string `json:"owner"`
	Token  uint64 `json:"token"`
	Manual bool   `json:"manual"`
	// Reason says why a run was started or ended as it was (for example who
	// triggered it, or why it was abandoned); "" when there is nothing to add.
	Reason string `json:"reason"`
	// By names who cancelled a cancelled run (or the replica whose newer
	// tick replaced it); absent otherwise.
	By string `json:"by,omitempty"`
	// Failed is true for a failure of the job (the scheduler's
	// definition: failed, timeout, lost, abandoned), which the page
	// colours as one.
	Failed bool `json:"failed"`
	// Backfill: the run of a past tick that a backfill ran.
	Backfill bool `json:"backfill,omitempty"`
}

// Lock is a job's lock while held.
type Lock struct {
	Owner      string    `json:"owner"`
	Token      uint64    `json:"token"`
	AcquiredAt time.Time `json:"acquired_at,omitzero"`
	ExpiresAt  time.Time `json:"expires_at,omitzero"`
}

// Replica is one live cronlock daemon.
type Replica struct {
	Owner   string    `json:"owner"`
	Host    string    `json:"host"`
	PID     int       `json:"pid"`
	Version string    `json:"version"`
	Started time.Time `json:"started,omitzero"`
	// Seen is when it last announced itself (NATS server clock, UTC): the
	// same field, in the same format, as in `cronlock replicas --json`.
	Seen time.Time `json:"seen"`
	// Labels are the replica's labels (replica.labels), which a job's
	// on_replicas matches; {} for none.
	Labels map[string]string `json:"labels"`
	// Running lists the jobs this replica is running now.
	Running []string `json:"running"`
	// ClockOffsetSeconds is this replica's clock minus the observer's, when
	// measured; nil (JSON null) when unknown.
	ClockOffsetSeconds *float64 `json:"clock_offset_seconds"`
}

// LabelText is the replica's labels as "key=value" pairs, sorted and
// joined by ", " (as the page's script writes them); "" for none.
func (r Replica) LabelText() string {
	pairs := make([]string, 0, len(r.Labels))
	for k, v := range r.Labels {
		pairs = append(pairs, k+"="+v)
	}
	slices.Sort(pairs)
	return strings.Join(pairs, ", ")
}
