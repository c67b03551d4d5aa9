package scheduler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/history"
	"github.com/cronlock/cronlock/internal/registry"
	"github.com/cronlock/cronlock/job"
)

// Where a job runs: job.Job.OnReplicas restricts a job to the replicas
// whose labels (Options.ReplicaLabels) match, and job.Job.RunOn
// every_replica runs each tick on every (matching) live replica.
//
// on_replicas: a replica that does not match never tries the job's lock;
// it follows the record like any replica. The spreading ranks only the
// matching live replicas (spreadDelay), so the job does not wait for a
// non-matching replica's turn. When no matching replica is live at a tick,
// the non-matching replicas record the tick missed with reason no_replica,
// after noReplicaWait (a matching replica that just started, which their
// registry has not heard of yet, claims it meanwhile): the record's
// compare-and-swap on the last claimed tick, as for a suspended job's
// skipped ticks, records it once whichever replica writes first, and a
// later claim finds nothing missed before it. With no replica live at all,
// or right after this replica's own outage (its view of the others cannot
// be trusted), the next claim records the gap, as for any job.
//
// every_replica: each replica schedules the job under a record of its own,
// ReplicaRecord(name, id), whose key holds the job's lock and history for
// that replica's runs: a replica's runs of the job never overlap, each tick
// is claimed once per replica, and the exactly-once guarantee becomes
// exactly once per replica. A replica that joins starts its record anew: no
// tick before it is caught up (a new record has nothing missed). One that
// leaves keeps its record; a run it left "running" is marked abandoned by
// its next claim under the same id.

// replicaRecordSep separates a job's name from a replica's key in the key
// of its every_replica record: '=' occurs in no job name
// (job.ValidateName), so the key never meets another job's, and as a
// token of its own it lets ListKeysFiltered find a job's records.
const replicaRecordSep = ".=."

// noReplicaWait is how long a replica that does not match a job's
// on_replicas waits, at a tick when no matching replica is live, before
// recording the tick missed with reason no_replica: long past the watch
// delivery of a matching replica's first announcement, or of its claim,
// and short enough that the job's loop, which waits with it, reaches the
// job's next tick of an every-second schedule in time.
const noReplicaWait = 250 * time.Millisecond

// skipElsewhere counts the ticks a replica does not try because the job's
// on_replicas does not match its labels.
const skipElsewhere = "on_replicas"

// ReplicaRecord is the key of the record of job name's runs on replica id
// when the job runs on every replica (job.RunOnEveryReplica).
func ReplicaRecord(name, id string) string {
	return name + replicaRecordSep + registry.Key(id)
}

// RecordJob returns the job a record key belongs to: the key itself, or
// the job's name for an every_replica record (see ReplicaRecord), and
// whether it is such a record.
func RecordJob(key string) (string, bool) {
	name, _, ok := strings.Cut(key, replicaRecordSep)
	return name, ok
}

// placed returns j as this replica schedules it: under its per-replica
// record for an every_replica job.
func (s *Scheduler) placed(j job.Job) job.Job {
	if j.RunOn == job.RunOnEveryReplica {
		j.Name = ReplicaRecord(j.Name, s.opts.ReplicaID)
	}
	return j
}

// entryNamed returns the registered job called name, by its own name or
// the one of its every_replica record. s.mu must be held.
func (s *Scheduler) entryNamed(name string) (*entry, string, bool) {
	if e, ok := s.jobs[name]; ok {
		return e, name, true
	}
	key := ReplicaRecord(name, s.opts.ReplicaID)
	e, ok := s.jobs[key]
	return e, key, ok
}

// matchesHere reports whether this replica may run e's job.
func (s *Scheduler) matchesHere(e *entry) bool {
	return job.Matches(s.opts.ReplicaLabels, e.job.OnReplicas)
}

// liveFor returns the live replicas that may run e's job and follow it
// (followset.go), for the spreading: only this replica for an
// every_replica job, whose record is its own.
func (s *Scheduler) liveFor(e *entry) []string {
	if e.job.RunOn == job.RunOnEveryReplica {
		return []string{s.opts.ReplicaID}
	}
	return followers(e.job.Name, s.registry.LiveMatching(e.job.OnReplicas))
}

// notPlacedHere handles a tick of a job that this replica may not run:
// it records the tick missed with reason no_replica when no matching
// replica is live (see the comment at the top), else leaves it to them. It
// reports whether NATS answered. An every_replica job's tick is recorded
// in the job's own record, which every replica shares, not in this
// replica's (which would get an entry from each non-matching replica).
func (s *Scheduler) notPlacedHere(e *entry, tick time.Time, log zerolog.Logger) bool {
	name := jobOf(e.job.Name)
	if len(s.registry.LiveMatching(e.job.OnReplicas)) > 0 || s.claims.covers(name, tick) {
		s.skip(name, skipElsewhere, nil, log)
		return true
	}
	t := s.clock.NewTimer(noReplicaWait)
	select {
	case <-s.ctx.Done():
		t.Stop()
		return true
	case <-t.Chan():
	}
	if len(s.registry.LiveMatching(e.job.OnReplicas)) > 0 || s.claims.covers(name, tick) || !s.health.Settled(time.Now()) {
		// Right after this replica's own announcements failed, every
		// other's may have lapsed in its view: the next claim records the
		// tick if no replica ran it.
		s.skip(name, skipElsewhere, nil, log)
		return true
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.stateTimeout())
	defer cancel()
	rs, recorded, err := s.history.missNoReplica(ctx, e.sched, name, tick, e.job.OnReplicas)
	switch {
	case err != nil:
		s.skip(name, skipError, err, log)
		return s.answered(e, skipError)
	case recorded:
		for _, r := range rs {
			s.m.missed.WithLabelValues(name, string(r.Reason)).Add(float64(max(r.Ticks, 1)))
			s.result(r)
		}
		log.Warn().Str("reason", string(ReasonNoReplica)).Msg("tick missed: no live replica matches the job's on_replicas")
	default:
		s.skip(name, skipElsewhere, nil, log)
	}
	return true
}

// missNoReplica records tick as claimed and missed with reason no_replica,
// unless it was claimed already, after the ticks between the last claimed
// tick and it, as a claim records them (addMissed: a catch-up's tick may
// be long after the last). It returns the entries and whether this call
// recorded them.
func (h *History) missNoReplica(ctx context.Context, sched job.Schedule, name string, tick time.Time, on map[string]string) ([]Run, bool, error) {
	var out []Run
	_, rev, err := h.update(ctx, name, nil, 0, func(st *history.Record) bool {
		if !st.LastTick.IsZero() && !tick.After(st.LastTick) {
			return false
		}
		req := claimRequest{sched: sched, run: Run{Job: name, Tick: tick}, gapReason: ReasonNoReplica}
		out = append(addMissed(st, req, map[Reason]int{}), st.Add(Run{Job: name, Tick: tick, Status: StatusMissed,
			Reason: ReasonNoReplica, Ticks: 1, Error: fmt.Sprintf("1 tick at %s ran on no replica: none live matches on_replicas %s",
				tick.UTC().Format(time.RFC3339), registryLabels(on))}))
		st.LastTick = tick
		st.Rerun = nil
		return true
	})
	return out, rev != 0, err
}

// registryLabels formats labels as the configuration writes them.
func registryLabels(on map[string]string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, kv := range sortedPairs(on) {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(kv)
	}
	b.WriteByte('}')
	return b.String()
}

// sortedPairs returns labels as "key: value" pairs, sorted.
func sortedPairs(labels map[string]string) []string {
	out := make([]string, 0, len(labels))
	for k, v := range labels {
		out = append(out, k+": "+v)
	}
	slices.Sort(out)
	return out
}

// jobOf is the job's own name for a record key (see RecordJob), as its
// runs see it (job.RunInfo.Job, CRONLOCK_JOB).
func jobOf(key string) string {
	name, _ := RecordJob(key)
	return name
}

// sweepsRecord reports whether this replica sweeps the record key for
// runs abandoned by a replica that is gone (sweep.go): a job registered
// here, or another replica's record of an every_replica job registered
// here, which that replica, gone, would never sweep itself.
func (s *Scheduler) sweepsRecord(key string) bool {
	if _, ok := s.lookup(key); ok {
		return true
	}
	name, ok := RecordJob(key)
	if !ok {
		return false
	}
	e, ok := s.lookup(ReplicaRecord(name, s.opts.ReplicaID))
	return ok && e.job.RunOn == job.RunOnEveryReplica
}

// ErrNotPlaced: Trigger or TriggerRun of a job whose on_replicas this
// replica's labels do not match (job.Job.OnReplicas).
var ErrNotPlaced = errors.New("this replica's labels do not match the job's on_replicas")

// RunsHere reports whether this replica may run the registered job name:
// it is registered and its on_replicas matches this replica's labels.
func (s *Scheduler) RunsHere(name string) bool {
	s.mu.Lock()
	e, _, ok := s.entryNamed(name)
	s.mu.Unlock()
	return ok && s.matchesHere(e)
}
