package main

import (
	"fmt"
	"io"
	"maps"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cronlock/cronlock/bench/internal/procstat"
)

// result is the merged outcome of one run.
type result struct {
	Config config    `json:"config"`
	Start  time.Time `json:"start"`
	End    time.Time `json:"end"`

	// Checked window: ticks from WindowFrom to WindowTo inclusive.
	WindowFrom  time.Time `json:"window_from"`
	WindowTo    time.Time `json:"window_to"`
	WindowTicks int       `json:"window_ticks"` // per job
	Expected    int       `json:"expected"`     // jobs × WindowTicks
	// JobTicks is jobs × ticks within (Start, End): the denominator of the
	// per-job-tick rates.
	JobTicks int `json:"job_ticks"`

	RunsTotal  int     `json:"runs_total"` // every run reported, whole run
	Ran        int     `json:"ran"`        // distinct (job, tick) of the window that ran
	Missing    int     `json:"missing"`
	MissingPct float64 `json:"missing_pct"`
	// Duplicates counts extra runs of one (job, tick), over the whole run.
	Duplicates    int      `json:"duplicates"`
	DupExamples   []string `json:"dup_examples,omitempty"`
	OffGrid       int      `json:"off_grid"`        // runs whose tick is not in (Start, End]
	MissingByTick []int    `json:"missing_by_tick"` // per window second

	// Delays (start − tick) of the window's runs, milliseconds.
	DelayP50  float64 `json:"delay_p50_ms"`
	DelayP90  float64 `json:"delay_p90_ms"`
	DelayP99  float64 `json:"delay_p99_ms"`
	DelayP999 float64 `json:"delay_p999_ms"`
	DelayMax  float64 `json:"delay_max_ms"`
	Late1s    int     `json:"late_1s"` // window runs that started > 1 s after their tick
	Late1sPct float64 `json:"late_1s_pct"`

	// MachineBusyByPhase is the CPU busy % of the whole machine (all cores)
	// in each 100 ms of the second after the tick, over the run.
	MachineBusyByPhase *[10]float64 `json:"machine_busy_pct_by_100ms_phase,omitempty"` // with -phases

	Replicas []replicaSummary `json:"replicas"`
	// Spread is the fewest and most window runs on one replica.
	Spread spread             `json:"runs_per_replica"`
	Server serverSummary      `json:"server"`
	Tap    map[string]float64 `json:"tap_per_job_tick,omitempty"`
	Trace  *traceSummary      `json:"lock_trace,omitempty"`

	// JobTicksPerSec is the checked window's distinct job-ticks that ran,
	// per second of the window.
	JobTicksPerSec float64 `json:"job_ticks_per_s"`
	// RecvPerReplica is the messages each replica's connection received
	// (nc.Stats().InMsgs) per job-tick: the mean and the most of one.
	RecvPerReplica    float64      `json:"msgs_received_per_replica_per_job_tick"`
	RecvPerReplicaMax float64      `json:"msgs_received_per_replica_per_job_tick_max"`
	GoroutinesPeakMax int          `json:"goroutines_peak_max_replica"`
	MaxRSSMiBMax      float64      `json:"max_rss_mib_max_replica"`
	CPUPerJobTickUs   float64      `json:"cpu_us_per_job_tick"` // replicas + server
	ReplicaCPUPerJTUs float64      `json:"replicas_cpu_us_per_job_tick"`
	ServerCPUPerJTUs  float64      `json:"server_cpu_us_per_job_tick"`
	Idle              *idleSummary `json:"idle,omitempty"`
}

type replicaSummary struct {
	Name           string             `json:"name"`
	Runs           int                `json:"runs"`
	WindowRuns     int                `json:"window_runs"` // runs of the checked window's ticks
	CPUPct         float64            `json:"cpu_pct"`
	UserS          float64            `json:"cpu_user_s"`
	SysS           float64            `json:"cpu_sys_s"`
	MaxRSSMiB      float64            `json:"max_rss_mib"`
	HeapMiB        float64            `json:"heap_inuse_end_mib"`
	HeapPeakMiB    float64            `json:"heap_inuse_peak_mib"`
	GoroutinesPeak int                `json:"goroutines_peak"`
	GCCycles       uint32             `json:"gc_cycles"`
	ShutdownS      float64            `json:"shutdown_s"`
	NATS           procstat.NATS      `json:"nats"`
	OutPerJobTick  float64            `json:"out_msgs_per_job_tick"`
	InPerJobTick   float64            `json:"in_msgs_per_job_tick"`
	Skipped        map[string]float64 `json:"skipped"`
	Missed         float64            `json:"missed_metric"`
	RunStatus      map[string]float64 `json:"run_status"`
	Acquire        map[string]float64 `json:"acquire"`
	AcquireMeanMs  map[string]float64 `json:"acquire_mean_ms"`
	Warnings       map[string]int     `json:"warnings,omitempty"`
}

type serverSummary struct {
	CPUPct        float64 `json:"cpu_pct"` // parent process ≈ nats-server
	InPerJobTick  float64 `json:"in_msgs_per_job_tick"`
	OutPerJobTick float64 `json:"out_msgs_per_job_tick"`
	// The same without the bench's own connections (lock trace, tap,
	// stream state requests): the replicas' traffic only.
	ReplicasInPerJobTick  float64 `json:"replicas_in_msgs_per_job_tick"`
	ReplicasOutPerJobTick float64 `json:"replicas_out_msgs_per_job_tick"`
	// Stored messages (successful writes, incl. purge markers) per job-tick.
	LockWritesPerJobTick float64 `json:"lock_writes_per_job_tick"`
	HistWritesPerJobTick float64 `json:"history_writes_per_job_tick"`
	// WritesPerJobTick is the stored messages per job-tick of every
	// bucket (KV_X is X; other streams by name), lost CAS races excluded
	// (streamSeqs), and WritesTotal their sum.
	WritesPerJobTick map[string]float64 `json:"writes_per_job_tick_by_bucket"`
	WritesTotal      float64            `json:"writes_per_job_tick_total"`
	CPUSeconds       float64            `json:"cpu_s"` // the parent's, over the measured phase
	APIErrors        uint64             `json:"js_api_errors"`
	SlowConsumers    int64              `json:"slow_consumers"`
}

func merge(c config, start, end time.Time, reps []*replicaReport, s0, s1, s2 serverSnap) *result {
	r := &result{Config: c, Start: start, End: end}
	first := start.Add(c.Margin).Truncate(time.Second)
	if first.Before(start.Add(c.Margin)) {
		first = first.Add(time.Second)
	}
	last := end.Add(-c.Margin).Truncate(time.Second)
	if c.Idle { // daily jobs: no tick is expected in the window
		last = first.Add(-time.Second)
	}
	r.WindowFrom, r.WindowTo = first, last
	var due []int64 // the window's ticks
	if !last.Before(first) {
		due = dueSeconds(c.Schedule, first, last.Add(time.Second))
	}
	r.WindowTicks = len(due)
	r.Expected = c.Jobs * r.WindowTicks
	lo, hi := first.Unix(), last.Unix()

	// Ticks strictly inside (start, end) for the rates.
	perJob := len(dueSeconds(c.Schedule, start.Truncate(time.Second).Add(time.Second), end))
	r.JobTicks = c.Jobs * perJob
	jt := float64(max(r.JobTicks, 1))

	counts := make([]map[int64]int, c.Jobs)
	for i := range counts {
		counts[i] = map[int64]int{}
	}
	var delays []int64
	for _, rep := range reps {
		n, w := 0, 0
		for j, runs := range rep.Runs {
			if j >= c.Jobs {
				break
			}
			for _, x := range runs {
				n++
				tick, d := x[0], x[1]
				counts[j][tick]++
				if counts[j][tick] > 1 {
					r.Duplicates++
					if len(r.DupExamples) < 10 {
						r.DupExamples = append(r.DupExamples, fmt.Sprintf("%s tick %s ran %d times (last on %s)",
							jobName(j), time.Unix(tick, 0).UTC().Format(time.TimeOnly), counts[j][tick], rep.Name))
					}
				}
				if tick <= start.Unix() || tick > end.Unix() {
					r.OffGrid++
				}
				if tick >= lo && tick <= hi {
					w++
					delays = append(delays, d)
					if d > int64(time.Second/time.Microsecond) {
						r.Late1s++
					}
				}
			}
		}
		r.RunsTotal += n
		members := float64(max(rep.Members, 1)) // the msgs per job-tick are per replica
		cpu := rep.UserSeconds + rep.SysSeconds
		rs := replicaSummary{
			Name: rep.Name, Runs: n, WindowRuns: w,
			CPUPct: 100 * cpu / max(rep.WallSeconds, 1e-9), UserS: rep.UserSeconds, SysS: rep.SysSeconds,
			MaxRSSMiB: float64(rep.MaxRSSKiB) / 1024, HeapMiB: float64(rep.HeapInuse) / (1 << 20),
			HeapPeakMiB: float64(rep.HeapInusePeak) / (1 << 20), GoroutinesPeak: rep.GoroutinesPeak,
			GCCycles: rep.GCCycles, ShutdownS: rep.ShutdownSeconds,
			NATS:          rep.NATS,
			OutPerJobTick: float64(rep.NATS.OutMsgs) / jt / members, InPerJobTick: float64(rep.NATS.InMsgs) / jt / members,
			Skipped: rep.Skipped, Missed: rep.Missed, RunStatus: rep.RunStatus, Acquire: rep.Acquire,
			AcquireMeanMs: map[string]float64{}, Warnings: rep.Warnings,
		}
		for k, v := range rep.Acquire {
			if v > 0 {
				rs.AcquireMeanMs[k] = 1000 * rep.AcquireSeconds[k] / v
			}
		}
		r.Replicas = append(r.Replicas, rs)
	}
	r.Spread = spreadOf(r.Replicas)
	if c.Idle {
		r.JobTicks = r.RunsTotal
	}
	for _, t := range due {
		m := 0
		for j := range c.Jobs {
			if counts[j][t] > 0 {
				r.Ran++
			} else {
				m++
			}
		}
		r.MissingByTick = append(r.MissingByTick, m)
		r.Missing += m
	}
	if r.Expected > 0 {
		r.MissingPct = 100 * float64(r.Missing) / float64(r.Expected)
		r.Late1sPct = 100 * float64(r.Late1s) / float64(r.Expected)
	}
	slices.Sort(delays)
	q := func(p float64) float64 {
		if len(delays) == 0 {
			return 0
		}
		return float64(delays[int(p*float64(len(delays)-1))]) / 1000
	}
	r.DelayP50, r.DelayP90, r.DelayP99, r.DelayP999 = q(0.5), q(0.9), q(0.99), q(0.999)
	if len(delays) > 0 {
		r.DelayMax = float64(delays[len(delays)-1]) / 1000
	}

	cpu := s1.ru.User + s1.ru.Sys - s0.ru.User - s0.ru.Sys
	measured := end.Sub(start)
	if c.Idle {
		measured = c.Window
	}
	r.Server = serverSummary{
		CPUPct:                100 * cpu / measured.Seconds(),
		CPUSeconds:            cpu,
		WritesPerJobTick:      writesBy(s0, s1, jt),
		InPerJobTick:          float64(s1.inMsgs-s0.inMsgs) / jt,
		OutPerJobTick:         float64(s1.outMsgs-s0.outMsgs) / jt,
		ReplicasInPerJobTick:  float64(s1.inMsgs-s0.inMsgs-(s1.ownOut-s0.ownOut)) / jt,
		ReplicasOutPerJobTick: float64(s1.outMsgs-s0.outMsgs-(s1.ownIn-s0.ownIn)) / jt,
		LockWritesPerJobTick:  float64(s1.lockSeq-s0.lockSeq) / jt,
		HistWritesPerJobTick:  float64(s1.histSeq-s0.histSeq) / jt,
		APIErrors:             s2.apiErrs - s0.apiErrs,
		SlowConsumers:         s2.slowConsumers,
	}
	r.Server.WritesTotal = sumWrites(r.Server.WritesPerJobTick)
	perJobTick(r)
	return r
}

func printSummary(w io.Writer, r *result) {
	c := r.Config
	fmt.Fprintf(w, "\n== %d replicas × %d jobs %q, work %v, %v (checked ticks %s–%s: %d × %d jobs = %d)\n",
		c.Replicas, c.Jobs, c.Schedule, c.Work, c.Duration,
		r.WindowFrom.Format(time.TimeOnly), r.WindowTo.Format(time.TimeOnly), r.WindowTicks, c.Jobs, r.Expected)
	verdict := "OK: every checked tick ran exactly once"
	if r.Duplicates > 0 || r.Missing > 0 {
		verdict = "NOT exactly once"
	}
	fmt.Fprintf(w, "%s: duplicates %d, missing %d (%.2f%%), runs %d (outside the run %d)\n",
		verdict, r.Duplicates, r.Missing, r.MissingPct, r.RunsTotal, r.OffGrid)
	for _, d := range r.DupExamples {
		fmt.Fprintf(w, "  duplicate: %s\n", d)
	}
	fmt.Fprintf(w, "delay start−tick: p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, p99.9 %.2f ms, max %.2f ms; late > 1 s: %d (%.2f%%)\n",
		r.DelayP50, r.DelayP90, r.DelayP99, r.DelayP999, r.DelayMax, r.Late1s, r.Late1sPct)
	fmt.Fprintf(w, "checked runs per replica, min–max: %s\n", r.Spread)
	if r.Missing > 0 {
		fmt.Fprintf(w, "missing per checked tick: %v\n", r.MissingByTick)
	}

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "replica\truns\tCPU %\tmaxRSS MiB\theap end/peak MiB\tgoroutines\tout msg/jt\tin msg/jt\tacquired/jt\tnot_acq/jt\tacq err/jt\tskip locked\tskip already_run\tskip error\tskip shutdown\tmissed (metric)\tshutdown s\t")
	jt := float64(max(r.JobTicks, 1))
	for _, rs := range r.Replicas {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.0f\t%.0f/%.0f\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%.3f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.1f\t\n",
			rs.Name, rs.Runs, rs.CPUPct, rs.MaxRSSMiB, rs.HeapMiB, rs.HeapPeakMiB, rs.GoroutinesPeak,
			rs.OutPerJobTick, rs.InPerJobTick,
			rs.Acquire["acquired"]/jt, rs.Acquire["not_acquired"]/jt, rs.Acquire["error"]/jt,
			rs.Skipped["locked"], rs.Skipped["already_run"], rs.Skipped["error"], rs.Skipped["shutdown"],
			rs.Missed, rs.ShutdownS)
	}
	tw.Flush()
	for _, rs := range r.Replicas {
		if len(rs.Warnings) == 0 {
			continue
		}
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(rs.Warnings)) {
			parts = append(parts, fmt.Sprintf("%q×%d", k, rs.Warnings[k]))
		}
		fmt.Fprintf(w, "%s warnings: %s\n", rs.Name, strings.Join(parts, ", "))
	}
	for _, rs := range r.Replicas {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(rs.AcquireMeanMs)) {
			parts = append(parts, fmt.Sprintf("%s %.1f ms", k, rs.AcquireMeanMs[k]))
		}
		fmt.Fprintf(w, "%s mean Acquire: %s\n", rs.Name, strings.Join(parts, ", "))
	}
	s := r.Server
	fmt.Fprintf(w, "nats-server (parent process) CPU %.1f%%; per job-tick: server in %.2f / out %.2f msgs, stored lock writes %.2f, history writes %.2f; JS API errors %d; slow consumers %d\n",
		s.CPUPct, s.InPerJobTick, s.OutPerJobTick, s.LockWritesPerJobTick, s.HistWritesPerJobTick, s.APIErrors, s.SlowConsumers)
	if r.Idle != nil {
		printIdle(w, r.Idle)
	} else {
		printJobTickLine(w, r)
	}
	if r.MachineBusyByPhase != nil {
		var ph []string
		for _, v := range r.MachineBusyByPhase {
			ph = append(ph, fmt.Sprintf("%.0f", v))
		}
		fmt.Fprintf(w, "machine CPU busy %% (all %s) by 100 ms after the tick: %s\n", cores(), strings.Join(ph, " "))
	}
	printTrace(w, r.Trace)
	if len(r.Tap) > 0 {
		fmt.Fprintln(w, "tap (all replicas, messages per job-tick by kind):")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, k := range slices.Sorted(maps.Keys(r.Tap)) {
			fmt.Fprintf(tw, "  %s\t%.2f\n", k, r.Tap[k])
		}
		tw.Flush()
	}
}

func cores() string { return fmt.Sprintf("%d cores", runtime.NumCPU()) }

func printSweep(w io.Writer, rs []*result) {
	fmt.Fprintln(w, "\n== sweep")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "jobs/s\tchecked\tmissing %\tlate>1s %\tdup\tp50 ms\tp99 ms\tmax ms\treplica CPU % (each)\tserver CPU %\truns/replica min–max\tacq err (sum)\twasted holds/jt\tnever-released holds\t")
	for _, r := range rs {
		var cpus []string
		skipErr := 0.0
		for _, x := range r.Replicas {
			cpus = append(cpus, fmt.Sprintf("%.0f", x.CPUPct))
			skipErr += x.Skipped["error"]
		}
		wasted, expired := "-", "-"
		if r.Trace != nil {
			wasted = fmt.Sprintf("%.2f", r.Trace.WastedPerTick)
			expired = fmt.Sprintf("%d/%d jobs", r.Trace.Expired, r.Trace.Jobs)
		}
		fmt.Fprintf(tw, "%d\t%d\t%.2f\t%.2f\t%d\t%.1f\t%.1f\t%.0f\t%s\t%.0f\t%s\t%.0f\t%s\t%s\t\n",
			r.Config.Jobs, r.Expected, r.MissingPct, r.Late1sPct, r.Duplicates, r.DelayP50, r.DelayP99, r.DelayMax,
			strings.Join(cpus, "/"), r.Server.CPUPct, r.Spread, skipErr, wasted, expired)
	}
	tw.Flush()
}
