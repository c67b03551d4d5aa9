package app

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/cronlock/cronlock/internal/config"
)

// definitionHashLength is how many hex digits of the SHA-256 a job's
// definition hash keeps: 64 bits tell definitions apart well enough, and
// the hash goes into every write of the job's state.
const definitionHashLength = 16

// definition is what a file job's hash covers: what runs and when. The
// notify targets, retries, jitter, grace, catch-up, interrupt policy and
// suspension are left out: replicas that differ only in them run the same
// thing at the same ticks.
type definition struct {
	Command  []string          `json:"command,omitempty"`
	Shell    string            `json:"shell,omitempty"`
	Env      map[string]string `json:"env,omitempty"` // encoding/json sorts the keys
	Dir      string            `json:"dir,omitempty"` // as resolved: absolute
	Schedule string            `json:"schedule"`
	Timezone string            `json:"timezone,omitempty"`
	Timeout  int64             `json:"timeout_ns,omitempty"`
	// The calendar keys come last and are omitted when empty, so that a
	// job without them keeps the hash it had before they existed.
	Schedules    []string `json:"schedules,omitempty"`
	ExcludeDates []string `json:"exclude_dates,omitempty"`
	StartAt      string   `json:"start_at,omitempty"` // as resolved: RFC 3339 in UTC
	EndAt        string   `json:"end_at,omitempty"`
	At           string   `json:"at,omitempty"` // a one-off's instant, as StartAt
	// The payload, as its JSON text; omitted when the job has none.
	Payload json.RawMessage `json:"payload,omitempty"`
}

// DefinitionHash is the job.Job.Definition of a file job: the first 16 hex
// digits of the SHA-256 of its command or shell line, env, dir, schedule
// (or schedules, exclude_dates, start_at and end_at, or at), timezone and
// timeout. Two replicas with the same values for these get
// the same hash whatever else differs; a changed env value changes it.
func DefinitionHash(cj config.Job) string {
	start, end := window(cj)
	data, _ := json.Marshal(definition{ // strings, a map of strings and an int: always encodes
		Command: cj.Command, Shell: cj.Shell, Env: cj.Env, Dir: cj.Dir,
		Schedule: cj.Schedule, Timezone: cj.Timezone, Timeout: int64(cj.Timeout),
		Schedules: cj.Schedules, ExcludeDates: dateStrings(cj), StartAt: instant(start), EndAt: instant(end),
		At:      instant(oneOffAt(cj)),
		Payload: json.RawMessage(cj.Payload),
	})
	sum := sha256.Sum256(data)
	// Only the digits kept are encoded: a slice of the 64 would keep all 64
	// bytes alive, 6 MB at 100,000 jobs.
	return hex.EncodeToString(sum[:definitionHashLength/2])
}

// OtherDefinition is recorded, the definition hash written with a job's
// last claim, when it is not cj's: the runs in the job's shared history
// are then another definition's (another deployment on the same buckets,
// or replicas with another configuration). "" when they are cj's, or when
// the claim recorded none (a release before definitions).
func OtherDefinition(cj config.Job, recorded string) string {
	if recorded == "" || recorded == DefinitionHash(cj) {
		return ""
	}
	return recorded
}

// dateStrings returns the job's excluded dates as YYYY-MM-DD.
func dateStrings(cj config.Job) []string {
	if cj.Cal == nil || len(cj.Cal.ExcludeDates) == 0 {
		return nil
	}
	out := make([]string, len(cj.Cal.ExcludeDates))
	for i, d := range cj.Cal.ExcludeDates {
		out[i] = d.String()
	}
	return out
}

// window is cj's start and end, zero when it has none.
func window(cj config.Job) (start, end time.Time) {
	if cj.Cal == nil {
		return time.Time{}, time.Time{}
	}
	return cj.Cal.StartAt, cj.Cal.EndAt
}

// oneOffAt is cj's at, zero when it is not a one-off.
func oneOffAt(cj config.Job) time.Time {
	if cj.Cal == nil {
		return time.Time{}
	}
	return cj.Cal.At
}

// instant returns t in RFC 3339 in UTC, "" for the zero time: two ways of
// writing one instant are one definition.
func instant(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}
