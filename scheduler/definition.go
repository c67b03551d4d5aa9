package scheduler

import (
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/job"
)

// Definition conflicts. Each replica writes, with every claim of a job's
// tick, the claiming job's job.Job.Definition (a hash of what it runs)
// into the job's shared state, and every write of the state carries it in
// history.DefinitionHeader. A replica whose watch sees a tick of one of its jobs
// claimed under another definition knows that the record is shared with a
// job that is not its own: another deployment on the same buckets, or
// replicas of one deployment with different configurations. It logs that
// at warn, once per job and foreign definition, and counts each such tick
// (cronlock_job_definition_conflicts_total), instead of taking those runs
// quietly for its own.
//
// During a rolling update or a reload the replicas' definitions differ
// for as long as they take to converge: each replica warns once per job
// and new definition, and the counter grows for those ticks only. The
// states read when the watch starts are not counted: they may be this
// replica's own claims before a restart with a new configuration.

// maxDefinitionLength bounds job.Job.Definition: it goes into every state
// write and its header (a hash is some 16 to 64 characters).
const maxDefinitionLength = 128

// checkDefinition validates j.Definition: at most maxDefinitionLength
// characters of visible ASCII (it is sent in a NATS header).
func checkDefinition(j job.Job) error {
	d := j.Definition
	if len(d) > maxDefinitionLength {
		return fmt.Errorf("job %q: definition: at most %d characters, got %d", j.Name, maxDefinitionLength, len(d))
	}
	for i := 0; i < len(d); i++ {
		if d[i] <= ' ' || d[i] > '~' {
			return fmt.Errorf("job %q: definition: visible ASCII characters only (it is sent in a NATS header)", j.Name)
		}
	}
	return nil
}

// newConflictsFamily is cronlock_job_definition_conflicts_total.
func newConflictsFamily() *counterFamily {
	return newCounterFamily[string]("cronlock_job_definition_conflicts_total",
		"Ticks of the job that this replica saw claimed in the job's shared record by another definition of the job "+
			"(another deployment on the same buckets, or replicas with different configurations).", "", nil)
}

// conflicts tracks, per job, the last claimed tick the watch showed and the
// foreign definitions already warned about.
type conflicts struct {
	mu     sync.Mutex
	armed  bool                 // the watch delivers new writes, not the states present at its start
	ticks  map[string]time.Time // job -> last claimed tick seen
	warned map[[2]string]bool   // (job, foreign definition) -> warned
}

func newConflicts() *conflicts {
	return &conflicts{ticks: map[string]time.Time{}, warned: map[[2]string]bool{}}
}

// arm starts counting: the watch has delivered the states present at its
// start.
func (c *conflicts) arm() {
	c.mu.Lock()
	c.armed = true
	c.mu.Unlock()
}

// observe reports whether the write v of the job's state is a new tick
// claimed under a definition other than own, and whether it is the first
// one of that definition for the job.
func (c *conflicts) observe(name, own string, v view) (conflict, first bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !v.lastTick.After(c.ticks[name]) {
		return false, false // a result, a suspension: not a claim
	}
	c.ticks[name] = v.lastTick
	if !c.armed || own == "" || v.definition == "" || v.definition == own {
		return false, false
	}
	k := [2]string{name, v.definition}
	first = !c.warned[k]
	c.warned[k] = true
	return true, first
}

// definitionChanged counts and reports a tick of e's job claimed under
// another definition (see conflicts).
func (s *Scheduler) definitionChanged(e *entry, v view) {
	conflict, first := s.conflicts.observe(e.job.Name, e.job.Definition, v)
	if !conflict {
		return
	}
	s.m.conflicts.WithLabelValues(e.job.Name).Inc()
	if first {
		warnConflict(s.log, e.job, v)
	}
}

func warnConflict(log zerolog.Logger, j job.Job, v view) {
	log.Warn().Str("job", j.Name).Str("definition", j.Definition).Str("other_definition", v.definition).
		Time("tick", v.lastTick).
		Msg("another definition of this job writes this job's shared record (another deployment on the same buckets, " +
			"or replicas with different configurations): the ticks it claims are not run by this definition, and the " +
			"history shows its runs; give each deployment its own `deployment` name, or make the replicas' configurations " +
			"the same (during a rolling update this lasts until every replica has the new configuration)")
}
