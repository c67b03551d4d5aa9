package app

import (
	"time"

	"github.com/cronlock/cronlock/internal/config"
	"github.com/cronlock/cronlock/internal/web"
	"github.com/cronlock/cronlock/scheduler"
)

// The status page's history at a glance (web/glance.go), from what a job's
// row already reads: its shared record, which holds its kept runs. It
// costs no read of its own; each job of a GET /api/jobs answer grows by
// its strip (at most history.size entries of tick, status and duration).

// nextLocalLayout is web.Job.NextLocal's: the wall clock of the job's
// zone with the zone's abbreviation, which labels it.
const nextLocalLayout = "2006-01-02 15:04:05 MST"

// glance fills j's strip, success rate, last owner and next tick in loc
// from the job's runs, newest first. A run counts for the rate when it
// ran and ended (missed and skipped ticks did not run; a running one has
// not ended); a failure is what RunStatus.Failed says, as everywhere.
func glance(j *web.Job, runs []scheduler.Run, loc *time.Location) {
	n := min(len(runs), web.MaxRecentRuns)
	j.RecentRuns = make([]web.RecentRun, n)
	ran, ok := 0, 0
	for i, r := range runs[:n] {
		j.RecentRuns[i] = web.RecentRun{Tick: r.Tick, Status: string(r.Status),
			DurationSeconds: r.Duration().Seconds(), Failed: r.Failed()}
		if r.Finished() && !r.Start.IsZero() {
			ran++
			if r.Succeeded() {
				ok++
			}
		}
	}
	if ran > 0 {
		rate := float64(ok) / float64(ran)
		j.SuccessRate = &rate
	}
	if n > 0 && !runs[0].Start.IsZero() {
		j.LastOwner = runs[0].Owner
	}
	if !j.Next.IsZero() && loc != nil {
		j.NextLocal = j.Next.In(loc).Format(nextLocalLayout)
	}
}

// settings is the job view's definition of the job: a file job's from the
// file, a runtime job's decoded from its stored definition (one decode per
// request of its page; nil when the definition no longer decodes).
func (st webState) settings(v jobView, rj *runtimeJob) *web.Settings {
	switch {
	case v.file != nil:
		return jobSettings(*v.file)
	case rj != nil:
		cj, err := decodeStored(st.cfg, nil, rj.Stored)
		if err != nil {
			return nil
		}
		return jobSettings(cj)
	}
	return nil
}

// jobSettings is cj's web.Settings: the keys set to other than their
// defaults. A kind's job shows its kind, not the command the kind gave it.
func jobSettings(cj config.Job) *web.Settings {
	s := &web.Settings{Kind: cj.Kind, Retries: cj.Retries, StartAt: cj.StartAt, EndAt: cj.EndAt,
		Timeout: durationText(cj.Timeout), RetryBackoff: durationText(cj.RetryBackoff),
		StartingDeadline: durationText(cj.StartingDeadline), Jitter: durationText(cj.Jitter)}
	if cj.Kind == "" {
		s.Command, s.Shell, s.Dir = cj.Command, cj.Shell, cj.Dir
	}
	if cj.Grace != config.DefaultJobGrace {
		s.Grace = cj.Grace.String()
	}
	if cj.OnInterrupt != "" && cj.OnInterrupt != "skip" {
		s.OnInterrupt = cj.OnInterrupt
	}
	if cj.Overlap != "" && cj.Overlap != "skip" {
		s.Overlap = cj.Overlap
	}
	if RunsOnEveryReplica(cj) {
		s.RunOn = cj.RunOn
	}
	s.OnReplicas = cj.OnReplicas
	return s
}

// durationText is d as a Go duration, or "" for 0 (the default of every
// duration it is used for).
func durationText(d config.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}
