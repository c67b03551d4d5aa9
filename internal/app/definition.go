package app

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

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
}

// DefinitionHash is the job.Job.Definition of a file job: the first 16 hex
// digits of the SHA-256 of its command or shell line, env, dir, schedule,
// timezone and timeout. Two replicas with the same values for these get
// the same hash whatever else differs; a changed env value changes it.
func DefinitionHash(cj config.Job) string {
	data, _ := json.Marshal(definition{ // strings, a map of strings and an int: always encodes
		Command: cj.Command, Shell: cj.Shell, Env: cj.Env, Dir: cj.Dir,
		Schedule: cj.Schedule, Timezone: cj.Timezone, Timeout: int64(cj.Timeout),
	})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:definitionHashLength]
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
