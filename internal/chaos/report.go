package chaos

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// Fprint writes a human-readable summary of r (and h) to w. verbose lists
// every miss and overlap.
func (r *Report) Fprint(w io.Writer, h *History, verbose bool) {
	fmt.Fprintf(w, "faults injected: %d\n", len(h.Faults))
	for _, k := range FaultKinds {
		if n := r.FaultsByKind[k]; n > 0 {
			fmt.Fprintf(w, "  %-18s %d\n", k, n)
		}
	}
	fmt.Fprintf(w, "runs recorded: %d (killed mid-run: %d, of which not by a replica kill: %d; started after their replica's SIGKILL: %d; ended fenced: %d; fence rejections: %d)\n", r.Runs, r.Killed, r.KilledOther, r.Posthumous, r.FencedRuns, r.Rejections)
	for _, j := range sortedKeys(r.RunsByJob) {
		fmt.Fprintf(w, "  %-8s %d\n", j, r.RunsByJob[j])
	}
	fmt.Fprintf(w, "1. overlaps: %d violations, %d fenced (frozen host's holder rejected by the fence), %d silent (frozen host's holder wrote nothing after the new holder's first write)\n", len(r.Overlaps)-r.FencedOverlaps-r.SilentOverlaps, r.FencedOverlaps, r.SilentOverlaps)
	fmt.Fprintf(w, "2. ticks run twice: %d\n", len(r.Duplicates))
	fmt.Fprintf(w, "3. coverage of short-job ticks %s–%s: %d/%d ran (%.2f%%); eligible %d/%d ran (%.2f%%)\n",
		h.From.Format(tsFmt), h.To.Format(tsFmt), r.Ran, r.Expected, pct(r.Ran, r.Expected), r.EligibleRan, r.Eligible, pct(r.EligibleRan, r.Eligible))
	for _, c := range sortedKeys(r.MissesByCause) {
		fmt.Fprintf(w, "   missed %-45s %d\n", c, r.MissesByCause[c])
	}
	if verbose {
		for _, m := range r.Misses {
			fmt.Fprintf(w, "     %s %s eligible=%v %s\n", m.Tick.Format("15:04:05"), m.Job, m.Eligible, m.Cause)
		}
	}
	if s := h.Shutdown; s != nil {
		fmt.Fprintf(w, "4. shutdown: exit codes %v, locks held %d, job processes alive %d, leftover processes %d, problems %d\n",
			s.ExitCodes, len(s.LocksHeld), len(s.LivePIDs), len(s.LiveProcs), len(s.Unexpected))
	}
	fmt.Fprintf(w, "5. takeover of a long job's lock after a fault on its holder (fault → next holder's start; lease %v):\n", h.Lease)
	printDelays(w, r.Takeover, h.Lease)
	fmt.Fprintf(w, "   recovery after NATS faults and rolling restarts (fault, or restore for an outage → every short job ran again):\n")
	printDelays(w, r.Recovery, 0)
	fmt.Fprintf(w, "   catch-up after NATS faults (streams have leaders and answer again → every short job ran again; target p99 < %v):\n", CatchUpTarget)
	printDelays(w, r.CatchUp, 0)
	if r.CatchUpInterrupted > 0 {
		fmt.Fprintf(w, "   (not counted: %d catch-up(s) the next fault began before; see -v)\n", r.CatchUpInterrupted)
	}
	if verbose {
		for _, c := range r.CatchUps {
			fmt.Fprintf(w, "   catch-up: %s\n", c)
		}
		for _, o := range r.Overlaps {
			fmt.Fprintf(w, "   overlap: %s\n", o)
		}
	}
	r.RunControl.fprint(w)
	fmt.Fprintf(w, "violations: %d\n", len(r.Violations))
	for _, v := range r.Violations {
		fmt.Fprintf(w, "  VIOLATION %s\n", v)
	}
}

func printDelays(w io.Writer, m map[string][]time.Duration, lease time.Duration) {
	for _, k := range sortedKeys(m) {
		ds := m[k]
		if lease > 0 {
			fmt.Fprintf(w, "   %-18s n=%-3d p50 %-8v p99 %-8v max %-8v (beyond lease: p50 %v, p99 %v)\n", k, len(ds),
				Percentile(ds, 50).Round(time.Millisecond), Percentile(ds, 99).Round(time.Millisecond), Percentile(ds, 100).Round(time.Millisecond),
				(Percentile(ds, 50) - lease).Round(time.Millisecond), (Percentile(ds, 99) - lease).Round(time.Millisecond))
		} else {
			fmt.Fprintf(w, "   %-18s n=%-3d p50 %-8v p99 %-8v max %v\n", k, len(ds),
				Percentile(ds, 50).Round(time.Millisecond), Percentile(ds, 99).Round(time.Millisecond), Percentile(ds, 100).Round(time.Millisecond))
		}
	}
}

// Markdown renders the results as tables for RELIABILITY.md.
func (r *Report) Markdown(h *History, command string, dur time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Command: `%s`  \nFault phase: %v; ticks checked %s to %s (UTC).\n\n", command, dur.Round(time.Second), h.From.UTC().Format(time.RFC3339), h.To.UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "| Fault kind | Injected |\n|---|---|\n")
	for _, k := range FaultKinds {
		fmt.Fprintf(&b, "| %s | %d |\n", k, r.FaultsByKind[k])
	}
	fmt.Fprintf(&b, "| **total** | **%d** |\n\n", len(h.Faults))
	fmt.Fprintf(&b, "| Check | Result |\n|---|---|\n")
	fmt.Fprintf(&b, "| runs recorded | %d (%s) |\n", r.Runs, jobCounts(r.RunsByJob))
	fmt.Fprintf(&b, "| runs killed mid-run (start, no end) / of which not by a replica kill | %d / %d |\n", r.Killed, r.KilledOther)
	fmt.Fprintf(&b, "| fence rejections / runs ended fenced | %d / %d |\n", r.Rejections, r.FencedRuns)
	fmt.Fprintf(&b, "| 1. overlaps that are violations | %d |\n", len(r.Overlaps)-r.FencedOverlaps-r.SilentOverlaps)
	fmt.Fprintf(&b, "| 1. fenced overlaps (pause-tree holder rejected by the fence) | %d |\n", r.FencedOverlaps)
	fmt.Fprintf(&b, "| 1. silent overlaps (pause-tree holder wrote nothing after the new holder's first write) | %d |\n", r.SilentOverlaps)
	fmt.Fprintf(&b, "| 2. ticks run twice | %d |\n", len(r.Duplicates))
	fmt.Fprintf(&b, "| 3. short-job ticks ran / expected | %d / %d (%.2f%%) |\n", r.Ran, r.Expected, pct(r.Ran, r.Expected))
	fmt.Fprintf(&b, "| 3. eligible ticks ran / eligible | %d / %d (%.2f%%) |\n", r.EligibleRan, r.Eligible, pct(r.EligibleRan, r.Eligible))
	if s := h.Shutdown; s != nil {
		fmt.Fprintf(&b, "| 4. exit codes after SIGTERM | %s |\n", exitCodes(s.ExitCodes))
		fmt.Fprintf(&b, "| 4. locks held / job processes left / other processes left | %d / %d / %d |\n", len(s.LocksHeld), len(s.LivePIDs), len(s.LiveProcs))
		fmt.Fprintf(&b, "| 4. unexpected exits or failed SIGTERMs | %d |\n", len(s.Unexpected))
	}
	r.RunControl.markdown(&b)
	fmt.Fprintf(&b, "| **violations** | **%d** |\n\n", len(r.Violations))
	fmt.Fprintf(&b, "Missed short-job ticks by cause:\n\n| Cause | Ticks |\n|---|---|\n")
	for _, c := range sortedKeys(r.MissesByCause) {
		fmt.Fprintf(&b, "| %s | %d |\n", c, r.MissesByCause[c])
	}
	fmt.Fprintf(&b, "\nTakeover of a long job after a fault on the replica running it (fault → start of the next holder's run; lease %v):\n\n", h.Lease)
	fmt.Fprintf(&b, "| Fault | n | p50 | p99 | max | p50 beyond lease | p99 beyond lease |\n|---|---|---|---|---|---|---|\n")
	for _, k := range sortedKeys(r.Takeover) {
		ds := r.Takeover[k]
		fmt.Fprintf(&b, "| %s | %d | %v | %v | %v | %v | %v |\n", k, len(ds), rd(Percentile(ds, 50)), rd(Percentile(ds, 99)), rd(Percentile(ds, 100)), rd(Percentile(ds, 50)-h.Lease), rd(Percentile(ds, 99)-h.Lease))
	}
	fmt.Fprintf(&b, "\nRecovery after NATS faults and rolling restarts (fault, or restore for an outage → every short job has run again):\n\n| Fault | n | p50 | p99 | max |\n|---|---|---|---|---|\n")
	for _, k := range sortedKeys(r.Recovery) {
		ds := r.Recovery[k]
		fmt.Fprintf(&b, "| %s | %d | %v | %v | %v |\n", k, len(ds), rd(Percentile(ds, 50)), rd(Percentile(ds, 99)), rd(Percentile(ds, 100)))
	}
	r.catchUpMarkdown(&b)
	if len(r.Violations) > 0 {
		fmt.Fprintf(&b, "\nViolations:\n\n")
		for _, v := range r.Violations {
			fmt.Fprintf(&b, "- %s\n", v)
		}
	}
	return b.String()
}

// CatchUpTarget is the target for the p99 catch-up after a NATS
// fault (reported, not checked: it is a latency, not a correctness rule).
const CatchUpTarget = time.Second

func (r *Report) catchUpMarkdown(b *strings.Builder) {
	fmt.Fprintf(b, "\nCatch-up after NATS faults (streams have leaders and answer requests again → every short job has run again; short jobs have `starting_deadline: %v`; target p99 < %v):\n\n", ShortStartingDeadline, CatchUpTarget)
	fmt.Fprintf(b, "| Fault | n | streams were down | p50 | p99 | max | p99 < %v |\n|---|---|---|---|---|---|---|\n", CatchUpTarget)
	for _, k := range sortedKeys(r.CatchUp) {
		lost := 0
		for _, c := range r.CatchUps {
			if c.Fault.Kind == k && c.Ran && c.LeadersLost {
				lost++
			}
		}
		fmt.Fprintf(b, "| %s | %d | %d | %s |\n", k, len(r.CatchUp[k]), lost, delayCells(r.CatchUp[k]))
	}
	if r.CatchUpInterrupted > 0 {
		fmt.Fprintf(b, "\nNot counted: %d catch-up(s) that the next fault began before (listed with `-v`).\n", r.CatchUpInterrupted)
	}
}

// delayCells renders p50, p99, max and whether p99 meets CatchUpTarget.
func delayCells(ds []time.Duration) string {
	met := "yes"
	if Percentile(ds, 99) >= CatchUpTarget {
		met = "**no**"
	}
	return fmt.Sprintf("%v | %v | %v | %s", rd(Percentile(ds, 50)), rd(Percentile(ds, 99)), rd(Percentile(ds, 100)), met)
}

func rd(d time.Duration) time.Duration { return d.Round(10 * time.Millisecond) }

func pct(a, b int) float64 {
	if b == 0 {
		return 100
	}
	return 100 * float64(a) / float64(b)
}

func jobCounts(m map[string]int) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func exitCodes(m map[string]int) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}
