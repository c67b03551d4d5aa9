package job

import "fmt"

// Overlap is a job's policy for a tick that comes while a run of the job
// is in progress (Job.Overlap), on any replica.
type Overlap int

const (
	// OverlapSkip (the default): the tick is not run; it is recorded missed
	// with reason overlap by the next claim. Kubernetes' Forbid.
	OverlapSkip Overlap = iota
	// OverlapQueue: the tick runs as soon as the run in progress ends. At
	// most one tick waits, the latest (Temporal's BufferOne): an older one
	// that waited is recorded missed with reason overlap.
	OverlapQueue
	// OverlapReplace: the run in progress is cancelled (recorded cancelled
	// with reason replaced) and the tick runs once it is gone. Kubernetes'
	// Replace.
	OverlapReplace
	// OverlapAllow: the tick starts while earlier runs still run, up to
	// Job.MaxParallel runs of the job at once across all replicas; a tick
	// that finds them all taken is recorded missed with reason overlap.
	// Each tick still runs once, and fencing tokens still grow per job.
	OverlapAllow
)

// overlapNames are the policies' names, as the configuration spells them.
var overlapNames = [...]string{OverlapSkip: "skip", OverlapQueue: "queue", OverlapReplace: "replace", OverlapAllow: "allow"}

func (o Overlap) String() string {
	if o >= 0 && int(o) < len(overlapNames) {
		return overlapNames[o]
	}
	return fmt.Sprintf("Overlap(%d)", int(o))
}

// MaxMaxParallel bounds Job.MaxParallel.
const MaxMaxParallel = 1000

// Parallel is how many runs of the job may run at once: MaxParallel under
// OverlapAllow (at least 1), else 1.
func (j Job) Parallel() int {
	if j.Overlap != OverlapAllow || j.MaxParallel < 1 {
		return 1
	}
	return j.MaxParallel
}

// ParseOverlap returns the policy called name ("" is skip).
func ParseOverlap(name string) (Overlap, error) {
	if name == "" {
		return OverlapSkip, nil
	}
	for o, n := range overlapNames {
		if n == name {
			return Overlap(o), nil
		}
	}
	return 0, fmt.Errorf("unknown overlap policy %q; use skip, queue, replace or allow", name)
}
