package chaos

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// Run-control jobs (issue 18). Besides the short and long jobs every
// replica runs:
//
//   - QueueJob, overlap: queue, ticking every QueueEvery and running
//     2.5–3.5 s (drawn per tick): one or two ticks come during each run;
//   - ReplaceJob, overlap: replace, ticking every second and running 2.5 s
//     unless replaced, so each run is stopped by the next tick;
//   - GroupJobs, all of concurrency group Group (max_running
//     GroupMaxRunning), due at once every GroupEvery, with a
//     starting_deadline (GroupStartingDeadline) so that the ones that find
//     the group full wait for a slot. The first runs 3 s, longer than the
//     lease, so that faults of its replica (pause, kill, cut) meet a slot
//     held beyond its lease while others wait for it; the others run
//     700 ms, one after the other in the second slot (about 2.8 s in all).
//
// None of them has retries; the queue and replace jobs have no
// starting_deadline, so a tick older than a run's end that runs after it
// can only be the queued one.
const (
	QueueJob              = "queue.a"
	QueueEvery            = 2 * time.Second
	ReplaceJob            = "replace.a"
	Group                 = "chaos"
	GroupMaxRunning       = 2
	GroupEvery            = 5 * time.Second
	GroupStartingDeadline = 4 * time.Second
)

// GroupJobs are the jobs of Group.
var GroupJobs = []string{"grp.a", "grp.b", "grp.c", "grp.d", "grp.e"}

// Policy is what the checker needs of a job's run control.
type Policy struct {
	Overlap string        `json:"overlap,omitempty"` // "queue" or "replace"; "" is skip
	Every   time.Duration `json:"every"`             // the job ticks on the multiples of Every
	Group   string        `json:"group,omitempty"`
}

// jobSpec is one job of the replicas' configuration.
type jobSpec struct {
	name             string
	every            time.Duration // the schedule: every this long (whole seconds dividing a minute)
	hold, holdMax    time.Duration // the run lasts hold, or [hold, holdMax] (see holdFor)
	startingDeadline time.Duration
	overlap, group   string
}

// schedule is the spec's six-field cron expression.
func (j jobSpec) schedule() string {
	if j.every <= time.Second {
		return "* * * * * *"
	}
	return fmt.Sprintf("*/%d * * * * *", int(j.every/time.Second))
}

// runControlJobs are the specs of the run-control jobs.
func runControlJobs() []jobSpec {
	specs := []jobSpec{
		{name: QueueJob, every: QueueEvery, hold: 2500 * time.Millisecond, holdMax: 3500 * time.Millisecond, overlap: "queue"},
		{name: ReplaceJob, every: time.Second, hold: 2500 * time.Millisecond, overlap: "replace"},
	}
	for i, j := range GroupJobs {
		hold := 700 * time.Millisecond
		if i == 0 {
			hold = 3 * time.Second
		}
		specs = append(specs, jobSpec{name: j, every: GroupEvery, hold: hold, startingDeadline: GroupStartingDeadline, group: Group})
	}
	return specs
}

// runControlPolicies are the policies of the run-control jobs, for History.
func runControlPolicies() map[string]Policy {
	out := map[string]Policy{}
	for _, s := range runControlJobs() {
		out[s.name] = Policy{Overlap: s.overlap, Every: s.every, Group: s.group}
	}
	return out
}

// writeJob appends the job's entry of the replicas' jobs: list.
func writeJob(b *strings.Builder, s jobSpec, recorder string, env map[string]string) {
	fmt.Fprintf(b, "  - name: %s\n    schedule: %q\n    command: [%q]\n    timeout: 30s\n    grace: 1s\n", s.name, s.schedule(), recorder)
	if s.startingDeadline > 0 {
		fmt.Fprintf(b, "    starting_deadline: %s\n", s.startingDeadline)
	}
	if s.overlap != "" {
		fmt.Fprintf(b, "    overlap: %s\n", s.overlap)
	}
	if s.group != "" {
		fmt.Fprintf(b, "    group: %s\n", s.group)
	}
	if s.holdMax > s.hold {
		env[EnvHoldMax] = s.holdMax.String()
	}
	b.WriteString("    env:\n")
	for _, k := range sortedKeys(env) {
		fmt.Fprintf(b, "      %s: %q\n", k, env[k])
	}
}

// RunControlReport is what Check found of the run-control jobs.
type RunControlReport struct {
	Groups    []GroupReport
	FollowOns []FollowOnReport
}

// GroupReport is the concurrency of one group's runs.
type GroupReport struct {
	Name       string
	MaxRunning int
	Jobs, Runs int // the group's jobs; their runs
	// MaxObserved is the most runs of the group's jobs at once, as the
	// jobs recorded their start and end, not counting a run whose host was
	// frozen (see Excused).
	MaxObserved int
	// Excused counts moments above MaxRunning only because a run's whole
	// host was frozen (pause-tree: the run did nothing while its slot's
	// lease ran out) or had been resumed at most a second before.
	Excused int
	// Ticks are the group's ticks in [From, To-GroupStartingDeadline-1s];
	// AllRan those at which every job of the group ran.
	Ticks, AllRan int
}

// FollowOnReport is how a queue or replace job's runs were followed.
type FollowOnReport struct {
	Job, Policy string
	// Checked: runs during which a tick came, that ended with their end
	// line well before To, away from faults that could disturb the
	// hand-over (see followOnDisturbed); NearFault: such runs not checked.
	Checked, NearFault int
	// Queued: checked runs followed by a run of a tick that came before
	// their end line; Later: by a tick that came after the end line, within
	// LateTickSlack (before cronlock recorded the result: it still counts
	// as during the run, for cronlock).
	Queued, Later int
	// Unrecorded: checked runs whose next recorded run's fencing token is
	// not the next one: a run was claimed in between (the tick that came)
	// and stopped before its recorder wrote its start line (replace: a
	// newer tick came before it could start). Under skip nothing is
	// claimed in between, so the tokens follow on. Its start is not timed.
	Unrecorded int
	Latency    []time.Duration // end line → the next run's start, of checked runs
}

// FollowLatency bounds, for a checked run of a queue or replace job, the
// time from its end line to the start of the next run, and for replace the
// time from the tick to the replaced run's end line: a liveness bound.
// cronlock hands over within milliseconds (4-minute soaks on a loaded
// machine: p99 under 100 ms for queue, 380–660 ms for replace); 1.5 s
// leaves room for a stalled machine. It also sets how long after a run's
// end a fault of another replica is taken to have disturbed the hand-over
// (followOnDisturbed), so a longer bound checks fewer runs (2 s: about
// half as many). Skip-like behaviour is caught by the tick that runs next
// (LateTickSlack) and, for replace, by the run not ending by SIGTERM.
const FollowLatency = 1500 * time.Millisecond

// LateTickSlack: a tick that comes this long after a run's end line is
// not taken for one that came during the run. cronlock records the result
// (which ends the run for it) within tens of milliseconds of the job's
// exit, and the recorder exits right after its end line; a tick in between
// is queued, replacing the one before it. A later tick running instead of
// the queued one means the queued tick was lost.
const LateTickSlack = 500 * time.Millisecond

// checkRunControl checks the group and the queue and replace jobs of h
// (histories without Policies have none). endOf is a run's effective end.
func checkRunControl(r *Report, h *History, byJob map[string][]Record, endOf func(Record) time.Time) {
	for _, name := range sortedKeys(h.Groups) {
		r.RunControl.Groups = append(r.RunControl.Groups, checkGroup(r, h, name, byJob, endOf))
	}
	for _, j := range sortedKeys(h.Policies) {
		if p := h.Policies[j]; p.Overlap == "queue" || p.Overlap == "replace" {
			r.RunControl.FollowOns = append(r.RunControl.FollowOns, checkFollowOn(r, h, j, p, byJob[j]))
		}
	}
}

// checkGroup holds the runs of group name's jobs to its max_running:
// intervals [start, end) as the jobs recorded them overlap at most
// MaxRunning at once. Every replica and the recorder run on one host, so
// the times are of one clock and need no tolerance: a run writes its start
// line after its replica took the slot and its end line before it exits,
// and the slot is freed after that, so a free slot's next holder starts
// after the end line. A run killed without an end line ends when its
// replica was killed or its process exited (Check's effective end); its
// slot stays held until the lease ends, a lease after that at least.
func checkGroup(r *Report, h *History, name string, byJob map[string][]Record, endOf func(Record) time.Time) GroupReport {
	g := GroupReport{Name: name, MaxRunning: h.Groups[name]}
	var runs []Record
	var jobs []string
	for _, j := range sortedKeys(h.Policies) {
		if h.Policies[j].Group == name {
			runs = append(runs, byJob[j]...)
			jobs = append(jobs, j)
		}
	}
	sort.SliceStable(runs, func(i, j int) bool { return runs[i].Start.Before(runs[j].Start) })
	g.Jobs, g.Runs = len(jobs), len(runs)
	for i, run := range runs {
		t := run.Start
		var at, frozen []Record
		for _, a := range runs[:i+1] {
			// A run with no known end is a violation of check 1 already;
			// counted here it would be one at every later start.
			if e := endOf(a); !e.After(t) || e.Equal(farFuture) {
				continue
			}
			if a.Start.Before(t) && frozenHost(h, a.Replica, t) {
				frozen = append(frozen, a)
				continue
			}
			at = append(at, a)
		}
		g.MaxObserved = max(g.MaxObserved, len(at))
		switch {
		case len(at) > g.MaxRunning:
			r.violate("group %s (max_running %d) ran %d at once at %s: %s", name, g.MaxRunning, len(at), t.Format(tsFmt), groupRuns(at, endOf))
		case len(at)+len(frozen) > g.MaxRunning:
			g.Excused++
		}
	}
	g.Ticks, g.AllRan = groupTicks(h, name, jobs, byJob)
	return g
}

func groupRuns(rs []Record, endOf func(Record) time.Time) string {
	parts := make([]string, len(rs))
	for i, x := range rs {
		parts[i] = fmt.Sprintf("%s tick %s on %s (pid %d, %s–%s)", x.Job, x.Tick.Format("15:04:05"), x.Replica, x.PID, x.Start.Format(tsFmt), endOf(x).Format(tsFmt))
	}
	return strings.Join(parts, "; ")
}

// groupTicks counts the group's ticks in [From, To-GroupStartingDeadline-1s]
// and those at which every job of the group ran.
func groupTicks(h *History, name string, jobs []string, byJob map[string][]Record) (ticks, allRan int) {
	if len(jobs) == 0 || h.From.IsZero() {
		return 0, 0
	}
	every := h.Policies[jobs[0]].Every
	ran := map[string]map[int64]bool{}
	for _, j := range jobs {
		ran[j] = map[int64]bool{}
		for _, run := range byJob[j] {
			ran[j][run.Tick.UnixNano()] = true
		}
	}
	last := h.To.Add(-GroupStartingDeadline - time.Second)
	for t := tickAfter(h.From.Add(-time.Nanosecond), every); !t.After(last); t = t.Add(every) {
		ticks++
		all := true
		for _, j := range jobs {
			all = all && ran[j][t.UnixNano()]
		}
		if all {
			allRan++
		}
	}
	return ticks, allRan
}

// tickBefore is the latest multiple of every at or before t; tickAfter the
// first after t.
func tickBefore(t time.Time, every time.Duration) time.Time {
	n := t.UnixNano()
	return time.Unix(0, n-n%int64(every)).UTC()
}

func tickAfter(t time.Time, every time.Duration) time.Time {
	return tickBefore(t, every).Add(every)
}

// checkFollowOn holds a queue or replace job to its policy. For each run
// during which a tick came (queue: the latest tick q in (start, end];
// replace: the first, which should stop it), that ended with its end line
// at least FollowLatency before To, and that no fault could have disturbed
// (followOnDisturbed):
//
//   - replace: the run ended by SIGTERM within FollowLatency of q;
//   - both: the next run of the job starts within FollowLatency of the end
//     line, with q or a later tick that came at most LateTickSlack after
//     the end line (before the result was recorded: queued too). Under
//     skip the next run would be of the next tick, up to QueueEvery after
//     the end line. A next run whose fencing token skips one follows a
//     claim in between that left no record (Unrecorded): the tick that
//     came was claimed, which skip never does.
//
// Every tick runs once and runs never overlap: Check's general checks,
// which cover these jobs too.
func checkFollowOn(r *Report, h *History, job string, p Policy, runs []Record) FollowOnReport {
	f := FollowOnReport{Job: job, Policy: p.Overlap}
	runs = append([]Record(nil), runs...)
	sort.SliceStable(runs, func(i, j int) bool { return runs[i].Start.Before(runs[j].Start) })
	for i, run := range runs {
		if run.End.IsZero() || run.Start.Before(h.From) || run.End.Add(FollowLatency).After(h.To) {
			continue
		}
		q := tickBefore(run.End, p.Every)
		if p.Overlap == "replace" {
			q = tickAfter(run.Start, p.Every)
		}
		if !q.After(run.Start) || q.After(run.End) {
			continue // no tick came during the run
		}
		if p.Overlap == "queue" && run.Status != "ok" {
			continue // stopped by cronlock: a fault's doing, or a shutdown
		}
		if followOnDisturbed(h, run) {
			f.NearFault++
			continue
		}
		f.Checked++
		desc := fmt.Sprintf("run of %s tick %s on %s (pid %d, %s–%s, %s)", job, run.Tick.Format("15:04:05"), run.Replica, run.PID, run.Start.Format(tsFmt), run.End.Format(tsFmt), run.Status)
		if p.Overlap == "replace" && (run.Status != "signal" || run.End.Sub(q) > FollowLatency) {
			r.violate("replace: %s was not stopped by its next tick %s within %v", desc, q.Format("15:04:05"), FollowLatency)
		}
		var next *Record
		if i+1 < len(runs) {
			next = &runs[i+1]
		}
		switch {
		case next != nil && run.Token > 0 && next.Token > run.Token+1 && !next.Tick.Before(q):
			f.Unrecorded++
		case next == nil || next.Start.Sub(run.End) > FollowLatency:
			what := "no later run"
			if next != nil {
				what = fmt.Sprintf("the next run (tick %s on %s) started %v after it", next.Tick.Format("15:04:05"), next.Replica, next.Start.Sub(run.End).Round(time.Millisecond))
			}
			r.violate("%s: tick %s came during %s but did not run within %v of its end: %s", p.Overlap, q.Format("15:04:05"), desc, FollowLatency, what)
		case next.Tick.Before(q):
			r.violate("%s: after %s an older tick %s ran instead of the latest, %s", p.Overlap, desc, next.Tick.Format("15:04:05"), q.Format("15:04:05"))
		case next.Tick.After(run.End.Add(LateTickSlack)):
			r.violate("%s: tick %s came during %s but did not run: the next run is of tick %s, %v after its end line (as under skip)", p.Overlap, q.Format("15:04:05"), desc, next.Tick.Format("15:04:05"), next.Tick.Sub(run.End).Round(time.Millisecond))
		default:
			f.Latency = append(f.Latency, next.Start.Sub(run.End))
			if next.Tick.After(run.End) {
				f.Later++
			} else {
				f.Queued++
			}
		}
	}
	return f
}

// followOnDisturbed reports whether a fault could have delayed or lost the
// hand-over after run (so checkFollowOn does not hold it to its policy):
//
//   - a fault of the run's own replica from a second before the run to
//     FollowLatency after its end (and a second after the fault ends): its
//     queuing of the tick, its stop (replace) or its write of the result
//     may fail;
//   - a fault of another replica that began or ended in the second before
//     the run's end or within FollowLatency after it: a replica that claims
//     the queued tick and is then killed, paused or cut holds it until its
//     lease ends. A replica faulted all along cannot claim it (the others
//     take their turn within tens of milliseconds), so it needs no excuse;
//   - a rolling restart, or a NATS fault up to a lease and a second after
//     it ended, overlapping the run or the hand-over; or a monitor sample in
//     that span without a quorum, a stream leader or answers.
func followOnDisturbed(h *History, run Record) bool {
	a, b := run.Start.Add(-time.Second), run.End.Add(FollowLatency)
	hits := func(from, to time.Time) bool { return !to.Before(a) && !from.After(b) }
	near := func(t time.Time) bool { return !t.Before(run.End.Add(-time.Second)) && !t.After(b) }
	for _, f := range h.Faults {
		end := f.End
		if end.Before(f.Start) {
			end = f.Start
		}
		switch {
		case isNATSFault(f.Kind) || f.Kind == FRolling:
			if hits(f.Start.Add(-time.Second), end.Add(h.Lease+time.Second)) {
				return true
			}
		case f.Target == run.Replica:
			if hits(f.Start, end.Add(time.Second)) {
				return true
			}
		case near(f.Start) || near(end):
			return true
		}
	}
	for _, s := range h.Samples {
		if !s.Time.Before(a) && !s.Time.After(b) && !sampleHealthy(h, s) {
			return true
		}
	}
	return false
}

// sampleHealthy: a quorum of nodes up and both streams with a leader (and,
// in probed histories, answering).
func sampleHealthy(h *History, s Sample) bool {
	return s.NodesUp >= 2 && s.LockLeader != "" && s.HistoryLeader != "" && (!h.Probed || s.LockAnswers && s.HistoryAnswers)
}

// fprint writes the run-control lines of Report.Fprint.
func (rc RunControlReport) fprint(w io.Writer) {
	for _, g := range rc.Groups {
		fmt.Fprintf(w, "7. group %s (max_running %d): %d runs; most at once %d (moments above it excused by a frozen host: %d); ticks at which all its jobs ran %d/%d\n",
			g.Name, g.MaxRunning, g.Runs, g.MaxObserved, g.Excused, g.AllRan, g.Ticks)
	}
	for _, f := range rc.FollowOns {
		fmt.Fprintf(w, "7. %s %s: runs during which a tick came checked %d (not checked, near a fault: %d); followed by the queued tick %d, by a tick that came after the end line %d, by a claim stopped before it recorded %d; end → next start p50 %v p99 %v max %v\n",
			f.Policy, f.Job, f.Checked, f.NearFault, f.Queued, f.Later, f.Unrecorded,
			Percentile(f.Latency, 50).Round(time.Millisecond), Percentile(f.Latency, 99).Round(time.Millisecond), Percentile(f.Latency, 100).Round(time.Millisecond))
	}
}

// markdown writes the run-control rows of the check table of
// Report.Markdown.
func (rc RunControlReport) markdown(b *strings.Builder) {
	for _, g := range rc.Groups {
		fmt.Fprintf(b, "| 7. group `%s` (max_running %d): most runs at once / runs | %d / %d |\n", g.Name, g.MaxRunning, g.MaxObserved, g.Runs)
		fmt.Fprintf(b, "| 7. group `%s`: moments above max_running excused by a frozen host (pause-tree) | %d |\n", g.Name, g.Excused)
		fmt.Fprintf(b, "| 7. group `%s`: ticks at which all %d jobs ran / ticks | %d / %d |\n", g.Name, g.Jobs, g.AllRan, g.Ticks)
	}
	for _, f := range rc.FollowOns {
		fmt.Fprintf(b, "| 7. `overlap: %s` (%s): runs a tick came during, checked / near a fault | %d / %d |\n", f.Policy, f.Job, f.Checked, f.NearFault)
		fmt.Fprintf(b, "| 7. `overlap: %s`: queued ticks run right after (came before the end line / after it, before the result) | %d / %d |\n", f.Policy, f.Queued, f.Later)
		fmt.Fprintf(b, "| 7. `overlap: %s`: followed by a claim stopped before it recorded (fencing token skipped) | %d |\n", f.Policy, f.Unrecorded)
		fmt.Fprintf(b, "| 7. `overlap: %s`: end → next run's start p50 / p99 / max | %v / %v / %v |\n", f.Policy,
			Percentile(f.Latency, 50).Round(time.Millisecond), Percentile(f.Latency, 99).Round(time.Millisecond), Percentile(f.Latency, 100).Round(time.Millisecond))
	}
}
