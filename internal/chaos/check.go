package chaos

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Fault is one injected fault. Replica faults name a replica as Target,
// NATS faults a node ("n1") or "all".
type Fault struct {
	Seq    int       `json:"seq"`
	Kind   string    `json:"kind"`
	Target string    `json:"target"`
	Start  time.Time `json:"start"` // injected
	End    time.Time `json:"end"`   // healed: restarted, resumed, reconnected
	Detail string    `json:"detail,omitempty"`
}

// Fault kinds.
const (
	FKill           = "kill"             // SIGKILL of a replica, restarted later
	FKillMidRun     = "kill-mid-run"     // SIGKILL of a replica while it runs a job
	FPause          = "pause"            // SIGSTOP of the cronlock process, then SIGCONT
	FPauseTree      = "pause-tree"       // SIGSTOP of cronlock and its jobs, then SIGCONT
	FCut            = "cut"              // replica's connections closed and refused
	FBlackhole      = "blackhole"        // replica's traffic silently held
	FDelay          = "delay"            // replica's traffic delayed
	FNATSKill       = "nats-kill"        // a NATS node killed, restarted later
	FNATSLeaderKill = "nats-leader-kill" // the leader node of the stream holding the jobs' locks (JobLockStream) killed
	FNATSOutage     = "nats-outage"      // every NATS node down longer than the lease
	FRolling        = "rolling-restart"  // every replica SIGTERMed and restarted in turn
)

// FaultKinds lists every kind, in a stable order.
var FaultKinds = []string{FKill, FKillMidRun, FPause, FPauseTree, FCut, FBlackhole, FDelay, FNATSKill, FNATSLeaderKill, FNATSOutage, FRolling}

func isNATSFault(kind string) bool {
	return kind == FNATSKill || kind == FNATSLeaderKill || kind == FNATSOutage
}

// Sample is one observation of the NATS cluster by the harness's monitor.
type Sample struct {
	Time          time.Time `json:"time"`
	NodesUp       int       `json:"nodes_up"`
	LockLeader    string    `json:"lock_leader"`    // "" when no running node reports one
	HistoryLeader string    `json:"history_leader"` // idem, for the history stream
	// LockAnswers and HistoryAnswers: the stream answered a stream-info
	// request and a KV get within probeTimeout (see prober).
	LockAnswers    bool `json:"lock_answers"`
	HistoryAnswers bool `json:"history_answers"`
}

// ShutdownState is what the harness saw after the final clean shutdown.
type ShutdownState struct {
	ExitCodes  map[string]int `json:"exit_codes"` // replica → exit code of its last process (-1: signal)
	LocksHeld  []string       `json:"locks_held"` // jobs whose record holds their lock, then keys of the lock bucket
	LivePIDs   []int          `json:"live_pids"`  // recorded job PIDs still alive
	LiveProcs  []string       `json:"live_procs"` // other leftover processes of the harness's binaries
	Unexpected []string       `json:"unexpected"` // replica processes that exited without being told to
}

// History is everything the checker needs about one run of the harness.
type History struct {
	Runs      []Record        `json:"runs"`
	Fence     []FenceDecision `json:"fence"`
	Faults    []Fault         `json:"faults"`
	Samples   []Sample        `json:"samples"`
	Lease     time.Duration   `json:"lease"`
	ShortJobs []string        `json:"short_jobs"` // every-second jobs: each tick in [From, To] is expected to run
	LongJobs  []string        `json:"long_jobs"`
	From      time.Time       `json:"from"`
	To        time.Time       `json:"to"`
	Shutdown  *ShutdownState  `json:"shutdown,omitempty"`
	// VanishedRuns: Record.Key → when the harness (polling every 50 ms)
	// first saw the run's process gone without its end line.
	VanishedRuns map[string]time.Time `json:"vanished_runs,omitempty"`
	// Probed: the samples have LockAnswers and HistoryAnswers (histories
	// of earlier versions do not).
	Probed bool `json:"probed,omitempty"`
	// Vanished is the same keyed by pid only, as written by earlier
	// versions (ambiguous when pids are reused); read for -recheck.
	Vanished map[int]time.Time `json:"vanished,omitempty"`
	// Policies: the run control of the jobs that have some (overlap,
	// group); Groups: concurrency group → max_running. Histories of
	// earlier versions have neither (nothing of it is checked).
	Policies map[string]Policy `json:"policies,omitempty"`
	Groups   map[string]int    `json:"groups,omitempty"`
}

// Overlap is two runs of one job that ran at the same time.
type Overlap struct {
	Earlier, Later Record
	Fenced         bool // the earlier (stale) run was rejected by the fence
	// Silent: not fenced, but every write of the stale run that the
	// fence accepted came before the newer run's first write, so the
	// resource saw the holders' writes in token order (the stale run was
	// frozen, or its last write beat the newer run's first by a hair).
	Silent bool
	// FrozenHost: the stale run's replica was under a pause-tree fault
	// (cronlock and its jobs stopped: a frozen host) when the newer run
	// started, or had been resumed at most 1 s before: the paused-holder
	// case fencing exists for. Only then is a fenced or silent overlap
	// excused. A pause of cronlock alone is no excuse: the job's shim
	// kills it at the lease's local safe deadline, before the server can
	// let another holder in, so any overlap there is a violation.
	FrozenHost bool
}

// Miss is a tick of a short job that did not run.
type Miss struct {
	Job      string
	Tick     time.Time
	Eligible bool   // a healthy replica could reach a NATS quorum with a stream leader
	Cause    string // attribution, see Check
}

// Delays are takeover or recovery delays after the faults of one kind.
type Delays struct {
	Kind   string
	Values []time.Duration
}

// Report is the outcome of Check.
type Report struct {
	Runs           int
	RunsByJob      map[string]int
	Killed         int // runs without an end line
	KilledOther    int // of which: not by a replica kill (cronlock's SIGKILL after the grace)
	Posthumous     int // runs that wrote their start line after their replica was SIGKILLed
	FencedRuns     int // runs that ended with a fence rejection
	Rejections     int // fence rejections
	Overlaps       []Overlap
	FencedOverlaps int
	SilentOverlaps int
	Duplicates     [][]Record
	Expected       int // short-job ticks in [From, To]
	Ran            int
	Eligible       int
	EligibleRan    int
	Misses         []Miss
	MissesByCause  map[string]int
	Takeover       map[string][]time.Duration // fault kind → delay from fault to the next holder's start (long jobs)
	Recovery       map[string][]time.Duration // fault kind → delay until every short job ran again
	// CatchUp: NATS fault kind → delay from the streams having leaders
	// again to every short job having run again (see CatchUp); CatchUps
	// has the details of every NATS fault.
	CatchUp  map[string][]time.Duration
	CatchUps []CatchUp
	// CatchUpInterrupted counts the catch-ups left out of CatchUp because
	// the next fault began first (CatchUp.Interrupted).
	CatchUpInterrupted int
	FaultsByKind       map[string]int
	RunControl         RunControlReport // the group and the queue and replace jobs
	Violations         []string
}

// OK reports whether no violation was found.
func (r *Report) OK() bool { return len(r.Violations) == 0 }

func (r *Report) violate(format string, args ...any) {
	r.Violations = append(r.Violations, fmt.Sprintf(format, args...))
}

// Check verifies h:
//
//  1. Exclusivity: no two runs of a job overlap, unless the earlier one was
//     rejected by the fence (counted apart as fenced overlaps). A run without
//     an end line is taken to have ended when its replica was killed; one
//     whose replica was not killed after it started has no known end and is
//     a violation, as is a run that ended more than a second after its
//     replica was killed (it outlived cronlock).
//  2. No tick of a job runs twice.
//  3. Coverage of short jobs (see attribute for the causes of misses).
//  4. Shutdown: exit codes 0, no lock held, no process left.
//  5. Takeover and recovery delays (reported, not checked).
//  6. Catch-up after NATS faults (reported, not checked; see catchUps).
//  7. Run control: a concurrency group never runs more than its
//     max_running at once; a queue or replace job's tick that came during
//     a run runs right after it (see checkRunControl).
func Check(h *History) *Report {
	r := &Report{RunsByJob: map[string]int{}, MissesByCause: map[string]int{}, Takeover: map[string][]time.Duration{}, Recovery: map[string][]time.Duration{}, CatchUp: map[string][]time.Duration{}, FaultsByKind: map[string]int{}}
	for _, f := range h.Faults {
		r.FaultsByKind[f.Kind]++
	}
	// PIDs are reused (pid_max is often 32768), so runs are told apart by
	// (replica, pid, job, tick) and fence decisions by (pid, job, token).
	type fk struct {
		pid   int
		job   string
		token uint64
	}
	rejected := map[fk]time.Time{}   // last rejection by the fence
	accepted := map[fk]time.Time{}   // last accepted write
	firstWrite := map[fk]time.Time{} // first accepted write
	for _, d := range h.Fence {
		if d.OK {
			k := fk{d.PID, d.Job, d.Token}
			if d.Time.After(accepted[k]) {
				accepted[k] = d.Time
			}
			if f, ok := firstWrite[k]; !ok || d.Time.Before(f) {
				firstWrite[k] = d.Time
			}
		}
		if !d.OK {
			r.Rejections++
			k := fk{d.PID, d.Job, d.Token}
			if d.Time.After(rejected[k]) {
				rejected[k] = d.Time
			}
		}
	}
	kills := map[string][]time.Time{} // replica → kill instants
	for _, f := range h.Faults {
		if f.Kind == FKill || f.Kind == FKillMidRun {
			kills[f.Target] = append(kills[f.Target], f.Start)
		}
	}
	killAfter := func(replica string, t time.Time) (time.Time, bool) {
		best, ok := time.Time{}, false
		for _, k := range kills[replica] {
			if !k.Before(t) && (!ok || k.Before(best)) {
				best, ok = k, true
			}
		}
		return best, ok
	}
	byJob := map[string][]Record{}
	effEnd := map[string]time.Time{} // RunKey → effective end
	for _, run := range h.Runs {
		r.Runs++
		r.RunsByJob[run.Job]++
		if run.Status == "fenced" {
			r.FencedRuns++
		}
		end := run.End
		if run.Start.IsZero() {
			r.violate("run of %s tick %s on %s (pid %d) has an end line but no start line", run.Job, run.Tick.Format(time.RFC3339), run.Replica, run.PID)
			continue
		}
		// A job whose shim was already starting it when cronlock was
		// SIGKILLed can write its start line a few ms after the kill (the
		// shim then kills it): look for kills from 500 ms before the start.
		k, killed := killAfter(run.Replica, run.Start.Add(-500*time.Millisecond))
		if killed && k.Before(run.Start) {
			r.Posthumous++
		}
		v, vanished := h.VanishedRuns[run.Key()]
		if !vanished && h.VanishedRuns == nil {
			// Histories before VanishedRuns: keyed by pid only, so
			// accept a time within the longest possible run (timeout
			// 30 s plus grace).
			v, vanished = h.Vanished[run.PID]
			vanished = vanished && !v.Before(run.Start) && v.Before(run.Start.Add(32*time.Second))
		}
		if end.IsZero() {
			r.Killed++
			switch {
			case killed && (!vanished || k.Before(v)):
				end = k
				if end.Before(run.Start) {
					end = run.Start
				}
			case vanished:
				// Gone without an end line, not when its replica was
				// killed: SIGKILLed by cronlock after the grace. It ended
				// between the harness's last poll and v.
				r.KilledOther++
				end = v
			default:
				r.violate("run of %s tick %s on %s (pid %d) started at %s and never ended, but its replica was not killed", run.Job, run.Tick.Format(time.RFC3339), run.Replica, run.PID, run.Start.Format(tsFmt))
				end = farFuture
			}
		}
		if killed && end.After(k.Add(time.Second)) {
			r.violate("run of %s tick %s on %s (pid %d) outlived its replica: killed at %s, run ended at %s", run.Job, run.Tick.Format(time.RFC3339), run.Replica, run.PID, k.Format(tsFmt), end.Format(tsFmt))
		}
		effEnd[run.Key()] = end
		byJob[run.Job] = append(byJob[run.Job], run)
	}
	endOf := func(run Record) time.Time { return effEnd[run.Key()] }

	// 1. Overlaps.
	for _, runs := range sortedJobs(byJob) {
		sort.SliceStable(runs, func(i, j int) bool { return runs[i].Start.Before(runs[j].Start) })
		var active []Record
		for _, run := range runs {
			kept := active[:0]
			for _, a := range active {
				if endOf(a).After(run.Start) {
					kept = append(kept, a)
				}
			}
			active = kept
			for _, a := range active {
				earlier, later := a, run
				if later.Token < earlier.Token {
					earlier, later = later, earlier
				}
				// Fenced: the stale run's writes were rejected once the
				// newer run existed (a rejected run ends at once).
				k := fk{earlier.PID, earlier.Job, earlier.Token}
				rej, ok := rejected[k]
				o := Overlap{Earlier: earlier, Later: later, Fenced: ok && !rej.Before(later.Start)}
				first, wrote := firstWrite[fk{later.PID, later.Job, later.Token}]
				if !o.Fenced {
					last := accepted[k]
					o.Silent = !wrote || last.Before(first)
				}
				o.FrozenHost = frozenHost(h, earlier.Replica, later.Start)
				r.Overlaps = append(r.Overlaps, o)
				switch {
				case o.Fenced && o.FrozenHost:
					r.FencedOverlaps++
				case o.Silent && o.FrozenHost:
					r.SilentOverlaps++
				default:
					r.violate("overlap: %s", o)
				}
			}
			active = append(active, run)
		}
	}

	// 1b. Tokens grow: a run that starts after another run of the job ended
	// carries a higher token (otherwise the fence would reject a legitimate
	// holder, e.g. after lock state was lost).
	for _, runs := range sortedJobs(byJob) {
		byEnd := append([]Record(nil), runs...)
		sort.Slice(byEnd, func(i, j int) bool { return endOf(byEnd[i]).Before(endOf(byEnd[j])) })
		var maxTok uint64
		var maxRun Record
		k := 0
		for _, run := range runs { // sorted by start above
			for k < len(byEnd) && endOf(byEnd[k]).Before(run.Start) {
				if byEnd[k].Token > maxTok {
					maxTok, maxRun = byEnd[k].Token, byEnd[k]
				}
				k++
			}
			if maxTok > 0 && run.Token <= maxTok {
				r.violate("token went backwards: %s tick %s on %s (pid %d) has token %d but an earlier run (tick %s on %s, pid %d) ended with token %d",
					run.Job, run.Tick.Format("15:04:05"), run.Replica, run.PID, run.Token, maxRun.Tick.Format("15:04:05"), maxRun.Replica, maxRun.PID, maxTok)
			}
		}
	}

	// 2. Duplicate ticks.
	type jt struct {
		job  string
		tick int64
	}
	ticks := map[jt][]Record{}
	for _, run := range h.Runs {
		ticks[jt{run.Job, run.Tick.UnixNano()}] = append(ticks[jt{run.Job, run.Tick.UnixNano()}], run)
	}
	var dups [][]Record
	for _, rs := range ticks {
		if len(rs) > 1 {
			dups = append(dups, rs)
		}
	}
	sort.Slice(dups, func(i, j int) bool { return dups[i][0].Start.Before(dups[j][0].Start) })
	for _, rs := range dups {
		r.Duplicates = append(r.Duplicates, rs)
		var parts []string
		for _, x := range rs {
			parts = append(parts, fmt.Sprintf("%s pid %d token %d attempt %d at %s", x.Replica, x.PID, x.Token, x.Attempt, x.Start.Format(tsFmt)))
		}
		r.violate("tick %s of %s ran %d times: %s", rs[0].Tick.Format(time.RFC3339), rs[0].Job, len(rs), strings.Join(parts, "; "))
	}

	// 3. Coverage.
	if !h.From.IsZero() {
		ran := map[jt]bool{}
		for _, run := range h.Runs {
			ran[jt{run.Job, run.Tick.UnixNano()}] = true
		}
		first := h.From.Truncate(time.Second)
		if first.Before(h.From) {
			first = first.Add(time.Second)
		}
		for t := first; !t.After(h.To); t = t.Add(time.Second) {
			eligible, cause := attribute(h, t)
			for _, j := range h.ShortJobs {
				r.Expected++
				if eligible {
					r.Eligible++
				}
				if ran[jt{j, t.UnixNano()}] {
					r.Ran++
					if eligible {
						r.EligibleRan++
					}
					continue
				}
				c := cause
				if eligible {
					c = missCause(h, j, t)
				}
				r.Misses = append(r.Misses, Miss{Job: j, Tick: t, Eligible: eligible, Cause: c})
				r.MissesByCause[c]++
			}
		}
	}

	// 7. Run control.
	checkRunControl(r, h, byJob, endOf)

	// 4. Shutdown.
	if s := h.Shutdown; s != nil {
		for _, name := range sortedKeys(s.ExitCodes) {
			if c := s.ExitCodes[name]; c != 0 {
				r.violate("replica %s exited with code %d after SIGTERM (want 0)", name, c)
			}
		}
		for _, k := range s.LocksHeld {
			r.violate("lock %q still held after a clean shutdown", k)
		}
		for _, p := range s.LivePIDs {
			r.violate("job process %d still alive after shutdown", p)
		}
		for _, p := range s.LiveProcs {
			r.violate("process left after shutdown: %s", p)
		}
		for _, u := range s.Unexpected {
			r.violate("unexpected replica exit: %s", u)
		}
	}

	// 5. Delays.
	long := map[string]bool{}
	for _, j := range h.LongJobs {
		long[j] = true
	}
	for _, f := range h.Faults {
		if !isNATSFault(f.Kind) && f.Kind != FRolling {
			// Takeover: the faulted replica was running a long job.
			for j := range long {
				var held *Record
				for i := range byJob[j] {
					run := byJob[j][i]
					if run.Replica == f.Target && !run.Start.After(f.Start) && !endOf(run).Before(f.Start) {
						held = &byJob[j][i]
					}
				}
				if held == nil {
					continue
				}
				for _, run := range byJob[j] {
					if run.Start.After(f.Start) && run.Token > held.Token {
						// A takeover: the held run was cut short (killed,
						// stopped by cronlock, fenced) or overlapped by the
						// next; a run that simply finished while its
						// replica kept the lease is not one.
						if held.Status != "ok" || endOf(*held).After(run.Start) {
							r.Takeover[f.Kind] = append(r.Takeover[f.Kind], run.Start.Sub(f.Start))
						}
						break
					}
				}
			}
			continue
		}
		// Recovery: from the fault (or the restore, for an outage) until
		// every short job has run again.
		ref := f.Start
		if f.Kind == FNATSOutage {
			ref = f.End
		}
		if worst, ok := firstRunsAfter(h.ShortJobs, byJob, ref); ok {
			r.Recovery[f.Kind] = append(r.Recovery[f.Kind], worst)
		}
	}
	for _, c := range catchUps(h, byJob) {
		r.CatchUps = append(r.CatchUps, c)
		switch {
		case c.Interrupted:
			r.CatchUpInterrupted++
		case c.Ran:
			r.CatchUp[c.Fault.Kind] = append(r.CatchUp[c.Fault.Kind], c.Delay)
		}
	}
	return r
}

// frozenHost reports whether replica was under a pause-tree fault at t (or
// had been resumed at most a second before it). Plain pause faults do not
// count: see Overlap.FrozenHost.
func frozenHost(h *History, replica string, t time.Time) bool {
	for _, f := range h.Faults {
		if f.Kind == FPauseTree && f.Target == replica && !f.Start.After(t) && !t.After(f.End.Add(time.Second)) {
			return true
		}
	}
	return false
}

const tsFmt = "15:04:05.000"

var farFuture = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

func (o Overlap) String() string {
	e, l := o.Earlier, o.Later
	end := "killed"
	if !e.End.IsZero() {
		end = e.End.Format(tsFmt)
	}
	return fmt.Sprintf("%s: tick %s on %s (pid %d, token %d, %s–%s, %s) and tick %s on %s (pid %d, token %d, from %s); fenced=%v silent=%v frozen-host=%v",
		e.Job, e.Tick.Format("15:04:05"), e.Replica, e.PID, e.Token, e.Start.Format(tsFmt), end, e.Status,
		l.Tick.Format("15:04:05"), l.Replica, l.PID, l.Token, l.Start.Format(tsFmt), o.Fenced, o.Silent, o.FrozenHost)
}

// Coverage causes. A tick is eligible when, at the tick, at least two NATS
// nodes run, both the lock and the history stream have a leader (as the
// monitor saw them in the samples around the tick) and some replica is
// healthy; the causes of an ineligible tick are:
const (
	CauseNoQuorum    = "no NATS quorum"              // fewer than 2 nodes up
	CauseNoLeader    = "no stream leader (election)" // quorum but a stream had no leader
	CauseNoReplica   = "no healthy replica"          // every replica faulted
	CauseUnexplained = "unexplained"                 // eligible, and no fault near it
)

// attribute says whether tick t was eligible and, if not, why. The monitor
// samples in [t-250ms, t+750ms] are consulted (one sampling period before
// the tick, and the 500 ms acquire timeout plus slack after it, the time in
// which replicas try to take the lock for the tick): any sample there
// without quorum or without a leader (in probed histories also: a stream
// that did not answer the prober) makes the tick ineligible.
func attribute(h *History, t time.Time) (bool, string) {
	quorum, leader := true, true
	for _, s := range h.Samples {
		if s.Time.Before(t.Add(-250*time.Millisecond)) || s.Time.After(t.Add(750*time.Millisecond)) {
			continue
		}
		if s.NodesUp < 2 {
			quorum = false
		}
		if s.LockLeader == "" || s.HistoryLeader == "" || h.Probed && !(s.LockAnswers && s.HistoryAnswers) {
			leader = false
		}
	}
	if !quorum {
		return false, CauseNoQuorum
	}
	if !leader {
		return false, CauseNoLeader
	}
	// Healthy replicas: the harness always keeps at least four of five up,
	// but say so if not.
	faulted := map[string]bool{}
	replicas := map[string]bool{}
	for _, f := range h.Faults {
		if isNATSFault(f.Kind) {
			continue
		}
		if f.Target != "all" {
			replicas[f.Target] = true
		}
		if !f.Start.After(t) && (f.End.IsZero() || f.End.After(t)) {
			faulted[f.Target] = true
		}
	}
	if faulted["all"] {
		return false, CauseNoReplica
	}
	return true, ""
}

// missCause attributes an eligible miss of job at t to the faults whose
// influence window contains t: for a kill [Start-1s, Start+lease+1s] and
// [restart-1s, restart+lease+1s]; for other replica faults [Start-1s, End+lease+1s]
// (the faulted replica may have taken the lock for the tick just before or
// while it was faulted, and the server frees it at most a lease later); for
// a NATS fault [Start-1s, End+lease+1s] too (clients reconnect, an
// acquisition in flight at the failure can leave the key held until it
// expires). Several matching faults are named together; none: unexplained.
func missCause(h *History, job string, t time.Time) string {
	var names []string
	seen := map[string]bool{}
	for _, f := range h.Faults {
		end := f.End
		if end.IsZero() || end.Before(f.Start) {
			end = f.Start
		}
		in := func(a, b time.Time) bool {
			return !t.Before(a.Add(-time.Second)) && !t.After(b.Add(h.Lease+time.Second))
		}
		if f.Kind == FKill || f.Kind == FKillMidRun {
			// Dead, the replica takes no lock: only the lease it held
			// when killed and its restart matter.
			if !in(f.Start, f.Start) && !in(end, end) {
				continue
			}
		} else if !in(f.Start, end) {
			continue
		}
		n := f.Kind
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return CauseUnexplained
	}
	sort.Strings(names)
	return "after " + strings.Join(names, "+")
}

func sortedJobs(m map[string][]Record) [][]Record {
	var out [][]Record
	for _, k := range sortedKeys(m) {
		out = append(out, m[k])
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// Percentile returns the p-th percentile (0..100) of ds, nearest rank.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(float64(len(s))*p/100+0.5) - 1
	i = max(0, min(i, len(s)-1))
	return s[i]
}
