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
)

// overlapNames are the policies' names, as the configuration spells them.
var overlapNames = [...]string{OverlapSkip: "skip", OverlapQueue: "queue", OverlapReplace: "replace"}

func (o Overlap) String() string {
	if o >= 0 && int(o) < len(overlapNames) {
		return overlapNames[o]
	}
	return fmt.Sprintf("Overlap(%d)", int(o))
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
	return 0, fmt.Errorf("unknown overlap policy %q; use skip, queue or replace", name)
}
