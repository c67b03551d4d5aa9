package chaos

import (
	"fmt"
	"sort"
	"time"
)

// Catch-up after NATS faults: how long after the streams have leaders
// again every short job has run again. The short jobs have a
// starting_deadline (ShortStartingDeadline), so a replica that regains
// coordination runs each job's latest missed tick at once instead of
// waiting for the next tick it can claim.

// CatchUp is the catch-up of one NATS fault.
type CatchUp struct {
	Fault Fault
	// Back is when the streams had leaders again: the time of the last
	// monitor sample, from the fault's start to the next fault's, that saw
	// fewer than two nodes up, a stream without a leader in /jsz or (in
	// probed histories) a stream that did not answer the prober. /jsz
	// alone is not enough: after a restart of every node it reports the
	// leaders recorded before, seconds before an election (the servers
	// log "new stream leader" only then, and requests get no responders).
	// Taking that sample's time rather than the next one's errs towards a
	// longer catch-up by at most the sampling period. The fault's start
	// when no sample saw the streams down (a follower node was killed).
	Back time.Time
	// LeadersLost reports whether some sample saw the streams down in
	// that span.
	LeadersLost bool
	// Delay is from Back to the latest of the short jobs' first run starts
	// after Back; Ran is false if some short job never started again.
	Delay time.Duration
	Ran   bool
	// Interrupted: the next fault started before every short job ran
	// again, so Delay includes that fault's own outage (the harness's
	// prober may see the streams down until the instant the next fault
	// starts). Such a catch-up is listed, not counted in the percentiles.
	Interrupted bool
}

func (c CatchUp) String() string {
	ran := c.Delay.Round(time.Millisecond).String()
	switch {
	case !c.Ran:
		ran = "not every short job ran again"
	case c.Interrupted:
		ran += " later, after the next fault began (not counted)"
		return fmt.Sprintf("fault %d %s %s at %s: streams had leaders and answered at %s (were down: %v); every short job ran %s", c.Fault.Seq, c.Fault.Kind, c.Fault.Target, c.Fault.Start.Format(tsFmt), c.Back.Format(tsFmt), c.LeadersLost, ran)
	}
	return fmt.Sprintf("fault %d %s %s at %s: streams had leaders and answered at %s (were down: %v); every short job ran %s later", c.Fault.Seq, c.Fault.Kind, c.Fault.Target, c.Fault.Start.Format(tsFmt), c.Back.Format(tsFmt), c.LeadersLost, ran)
}

// catchUps measures every NATS fault's catch-up. faults must be in the
// order they were injected (they do not overlap).
func catchUps(h *History, byJob map[string][]Record) []CatchUp {
	samples := append([]Sample(nil), h.Samples...)
	sort.Slice(samples, func(i, j int) bool { return samples[i].Time.Before(samples[j].Time) })
	var out []CatchUp
	for i, f := range h.Faults {
		if !isNATSFault(f.Kind) {
			continue
		}
		until := farFuture
		if i+1 < len(h.Faults) {
			until = h.Faults[i+1].Start
		}
		c := CatchUp{Fault: f, Back: f.Start}
		for _, s := range samples {
			if s.Time.Before(f.Start) || !s.Time.Before(until) {
				continue
			}
			if s.NodesUp < 2 || s.LockLeader == "" || s.HistoryLeader == "" || h.Probed && !(s.LockAnswers && s.HistoryAnswers) {
				c.Back, c.LeadersLost = s.Time, true
			}
		}
		c.Delay, c.Ran = firstRunsAfter(h.ShortJobs, byJob, c.Back)
		c.Interrupted = c.Ran && c.Back.Add(c.Delay).After(until)
		out = append(out, c)
	}
	return out
}

// firstRunsAfter returns how long after t the last of jobs started its
// first run after t, and whether every job did.
func firstRunsAfter(jobs []string, byJob map[string][]Record, t time.Time) (time.Duration, bool) {
	var worst time.Duration
	for _, j := range jobs {
		found := false
		for _, run := range byJob[j] { // sorted by start
			if run.Start.After(t) {
				worst = max(worst, run.Start.Sub(t))
				found = true
				break
			}
		}
		if !found {
			return worst, false
		}
	}
	return worst, len(jobs) > 0
}
