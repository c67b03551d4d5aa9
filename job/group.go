package job

import "fmt"

// Group is a cluster-wide concurrency group (Job.Group): at most
// MaxRunning runs of the group's jobs at once across all replicas. Every
// job of a group must give it the same MaxRunning.
type Group struct {
	Name       string
	MaxRunning int
}

// MaxGroupNameLen bounds a group's name: it goes into lock keys.
const MaxGroupNameLen = 64

// GroupError is the error of the job's Group alone (nil when valid), for
// callers that check a group before its jobs.
func (j Job) GroupError() error { return j.Group.validate() }

// validate checks a job's group; the zero Group (no group) is valid.
func (g Group) validate() error {
	if g.Name == "" {
		if g.MaxRunning != 0 {
			return fmt.Errorf("group: max running %d without a name", g.MaxRunning)
		}
		return nil
	}
	if len(g.Name) > MaxGroupNameLen {
		return fmt.Errorf("group %q: longer than %d characters", g.Name, MaxGroupNameLen)
	}
	for i := 0; i < len(g.Name); i++ {
		if !nameByte(g.Name[i]) {
			return fmt.Errorf("group %q: character %q is not allowed; use letters, digits, '-' and '_'", g.Name, g.Name[i])
		}
	}
	if g.MaxRunning < 1 {
		return fmt.Errorf("group %q: max running must be at least 1, got %d", g.Name, g.MaxRunning)
	}
	return nil
}
