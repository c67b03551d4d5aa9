package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/cronlock/cronlock/lock"
	"github.com/cronlock/cronlock/scheduler"
)

// perJobTick fills in the result's per-job-tick costs from its replicas
// and server summaries. CPU is getrusage: each replica's over its run (GO
// to Run returned, the shutdown included) and the parent's over the run,
// which is the embedded nats-server's plus the bench's own lock trace
// (-trace) and phase sampler (-phases, about 8 ms a second: leave it off
// when measuring CPU).
func perJobTick(r *result) {
	jt := float64(max(r.JobTicks, 1))
	if secs := r.WindowTo.Sub(r.WindowFrom).Seconds() + 1; r.WindowTicks > 0 && secs > 0 {
		r.JobTicksPerSec = float64(r.Ran) / secs
	}
	var cpu float64
	for _, rs := range r.Replicas {
		r.RecvPerReplica += rs.InPerJobTick / float64(len(r.Replicas))
		r.RecvPerReplicaMax = max(r.RecvPerReplicaMax, rs.InPerJobTick)
		r.GoroutinesPeakMax = max(r.GoroutinesPeakMax, rs.GoroutinesPeak)
		r.MaxRSSMiBMax = max(r.MaxRSSMiBMax, rs.MaxRSSMiB)
		cpu += rs.UserS + rs.SysS
	}
	r.ReplicaCPUPerJTUs = 1e6 * cpu / jt
	r.ServerCPUPerJTUs = 1e6 * r.Server.CPUSeconds / jt
	r.CPUPerJobTickUs = r.ReplicaCPUPerJTUs + r.ServerCPUPerJTUs
}

// bucket columns of the per-job-tick table, in order; any other bucket
// with writes goes in "other".
var tableBuckets = []string{lock.DefaultBucket, scheduler.DefaultHistoryBucket, scheduler.DefaultReplicaBucket}

func writesColumns(m map[string]float64) (named []float64, other float64) {
	named = make([]float64, len(tableBuckets))
	for k, v := range m {
		if i := slices.Index(tableBuckets, k); i >= 0 {
			named[i] = v
		} else {
			other += v
		}
	}
	return named, other
}

func printJobTickLine(w io.Writer, r *result) {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(r.Server.WritesPerJobTick)) {
		parts = append(parts, fmt.Sprintf("%s %.3f", k, r.Server.WritesPerJobTick[k]))
	}
	fmt.Fprintf(w, "per job-tick (%d job-ticks, %.0f/s ran): stored writes %.3f (%s; lost CAS races are not stored); server msgs in %.2f / out %.2f (the replicas' only: %.2f / %.2f); msgs received per replica %.2f (max %.2f); CPU %.0f µs (replicas %.0f + server %.0f)\n",
		r.JobTicks, r.JobTicksPerSec, r.Server.WritesTotal, strings.Join(parts, ", "),
		r.Server.InPerJobTick, r.Server.OutPerJobTick, r.Server.ReplicasInPerJobTick, r.Server.ReplicasOutPerJobTick,
		r.RecvPerReplica, r.RecvPerReplicaMax, r.CPUPerJobTickUs, r.ReplicaCPUPerJTUs, r.ServerCPUPerJTUs)
	fmt.Fprintf(w, "per replica (most of one): goroutines peak %d, max RSS %.0f MiB\n", r.GoroutinesPeakMax, r.MaxRSSMiBMax)
}

// printPerJobTick is the sweep's second table: what one job-tick costs.
func printPerJobTick(w io.Writer, rs []*result) {
	fmt.Fprintln(w, "\n== per job-tick")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "replicas\tjobs/s\tran/s\tp50 ms\tp99 ms\tdup\tmissing\twrites %s\tother\ttotal\tserver in (replicas)\tserver out (replicas)\trecv/replica\tCPU µs (repl+server)\tgoroutines max\tRSS MiB max\t\n",
		strings.Join(tableBuckets, "\t"))
	for _, r := range rs {
		named, other := writesColumns(r.Server.WritesPerJobTick)
		cols := make([]string, len(named))
		for i, v := range named {
			cols[i] = fmt.Sprintf("%.3f", v)
		}
		fmt.Fprintf(tw, "%d\t%d\t%.0f\t%.1f\t%.1f\t%d\t%d\t%s\t%.3f\t%.3f\t%.2f\t%.2f\t%.2f\t%.0f (%.0f+%.0f)\t%d\t%.0f\t\n",
			r.Config.Replicas, r.Config.Jobs, r.JobTicksPerSec, r.DelayP50, r.DelayP99, r.Duplicates, r.Missing,
			strings.Join(cols, "\t"), other, r.Server.WritesTotal, r.Server.ReplicasInPerJobTick, r.Server.ReplicasOutPerJobTick,
			r.RecvPerReplica, r.CPUPerJobTickUs, r.ReplicaCPUPerJTUs, r.ServerCPUPerJTUs, r.GoroutinesPeakMax, r.MaxRSSMiBMax)
	}
	tw.Flush()
}
