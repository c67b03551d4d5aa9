package scheduler

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cronlock/cronlock/job"
)

// metrics are the scheduler's Prometheus collectors. They always exist, so
// the code records unconditionally; they are registered only when
// Options.Registerer is set.
type metrics struct {
	counters    *jobCounters             // runs, missed, lost, anomalies, conflicts
	runs        jobCounterVec            // job, status
	duration    *prometheus.HistogramVec // job
	skipped     *prometheus.CounterVec   // job, reason
	missed      jobCounterVec            // job, reason
	acquire     *prometheus.HistogramVec // result
	lost        jobCounterVec            // job
	anomalies   jobCounterVec            // job, kind
	running     *prometheus.GaugeVec     // job
	lastSuccess *prometheus.GaugeVec     // job
	lastFailure *prometheus.GaugeVec     // job
	state       *stateGauges             // sets lastSuccess and lastFailure
	clockOffset prometheus.Gauge
	jobs        *jobGauges // job (next run, suspended, info, interval), read at scrape time
	live        prometheus.GaugeFunc
	claimLead   prometheus.GaugeFunc // ahead.go
	claimsQueue prometheus.GaugeFunc // claimgate.go

	conflicts jobCounterVec // job (definition.go)
}

// Reasons a replica skips a tick.
const (
	skipLocked     = "locked"      // another replica holds the job's lock
	skipAlreadyRun = "already_run" // the tick (or a later one) was claimed already
	skipError      = "error"       // NATS failed while acquiring or claiming
	skipShutdown   = "shutdown"    // the scheduler is stopping
	// skipFollowers: more than followersPerJob replicas may run the job,
	// and this one is not among its followers (followset.go).
	skipFollowers = "followers"
	// ReasonSuspended ("suspended"): the job is suspended; counted by the
	// replica that recorded the skipped tick.
)

// runResults are the statuses a run of this replica ends with: the values
// of the status label of cronlock_runs_total, each of which exists (at 0)
// for every job from its start, so that increase() sees the first failure.
var runResults = []RunStatus{StatusSucceeded, StatusFailed, StatusTimeout, StatusLost, StatusCancelled, StatusInterrupted}

// newMetrics creates the collectors, the per-job gauges reading the jobs
// of s at each scrape, and registers them on reg (nil: none).
func newMetrics(reg prometheus.Registerer, s *Scheduler) (*metrics, error) {
	runs := newCounterFamily("cronlock_runs_total", "Runs finished on this replica, by job and status.", "status", runResults)
	missed := newCounterFamily("cronlock_ticks_missed_total",
		"Ticks that no replica ran, by job and reason (overlap: a run of the job held its lock; no_replica; outage; lock_held: the lock's holder did not claim them), counted by the replica that recorded them.",
		"reason", MissedReasons)
	lost := newCounterFamily[string]("cronlock_leases_lost_total", "Runs whose lock lease was lost while running.", "", nil)
	anomalies := newCounterFamily("cronlock_state_anomalies_total",
		"Shared job records this replica found untrustworthy and repaired, by job and kind (future_tick: a last claimed tick beyond the server's time; corrupt: not a job state).",
		"kind", AnomalyKinds)
	conflicts := newConflictsFamily()
	counters := newJobCounters(runs, missed, lost, anomalies, conflicts)
	m := &metrics{
		counters: counters, runs: jobCounterVec{counters, runs}, missed: jobCounterVec{counters, missed},
		lost: jobCounterVec{counters, lost}, anomalies: jobCounterVec{counters, anomalies}, conflicts: jobCounterVec{counters, conflicts},
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "cronlock_run_duration_seconds", Help: "Duration of runs on this replica (all attempts).",
			Buckets: prometheus.ExponentialBuckets(0.005, 4, 12), // 5 ms … 6 h
		}, []string{"job"}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cronlock_ticks_skipped_total", Help: "Ticks this replica did not run, by job and reason (locked, already_run, error, shutdown, suspended).",
		}, []string{"job", "reason"}),
		acquire: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "cronlock_lock_acquire_seconds", Help: "Time to acquire a job's lock, by result (acquired, not_acquired, error).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10), // 100 µs … 26 s
		}, []string{"result"}),
		running: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "cronlock_running_jobs", Help: "Runs in progress on this replica, by job.",
		}, []string{"job"}),
		lastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "cronlock_last_success_timestamp_seconds", Help: "Unix time of the job's last successful run on any replica (shared history).",
		}, []string{"job"}),
		lastFailure: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "cronlock_last_failure_timestamp_seconds", Help: "Unix time of the job's last failed run (failed, timeout, lost, abandoned) on any replica (shared history).",
		}, []string{"job"}),
		clockOffset: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "cronlock_clock_offset_seconds", Help: "Estimated NATS server clock minus this host's clock; ticks follow the server's clock.",
		}),
		jobs: newJobGauges(s),
		live: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "cronlock_live_replicas", Help: "Replicas this replica sees as live (announced within the replica TTL), itself included once announced.",
		}, func() float64 { return float64(len(s.registry.Live())) }),
		claimLead: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "cronlock_claim_lead_seconds",
			Help: "How long before their ticks this replica claims jobs with overlap skip and no group: twice its longest recent claim, up to 0.5, and 0 while claims are quick. A replica that fails in the lead holds the ticks it claimed until their lease ends.",
		}, func() float64 { return s.pace.lead(s.now()).Seconds() }),
		claimsQueue: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "cronlock_claims_waiting",
			Help: "Due ticks waiting on this replica for a place among its claims in flight (at most 128 at a time): non-zero while a burst of jobs due together is being claimed.",
		}, func() float64 { return float64(s.gate.waiting()) }),
	}
	m.state = newStateGauges(m.lastSuccess, m.lastFailure)
	if reg == nil {
		return m, nil
	}
	cs := []prometheus.Collector{m.duration, m.skipped, m.acquire, m.running, m.lastSuccess, m.lastFailure, m.clockOffset, m.live, m.claimLead, m.claimsQueue}
	if !s.opts.StreamJobMetrics { // else JobMetricFamilies writes them
		cs = append(cs, m.counters, m.jobs)
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// jobAdded creates the job's counters at 0: runs by every result, missed
// ticks by every reason, lost leases, anomalies by kind. A counter that first appears at 1 is
// invisible to increase(), so without them the first failure would not
// alert. The counters of a removed job are kept (until the process ends):
// deleting them could drop an increment made just before a reload that
// Prometheus has not scraped yet, and a job changed by a reload is removed
// and added again under the same name.
func (m *metrics) jobAdded(name string) {
	m.counters.add(name)
}

// leaseLost counts a run of the job whose lock lease was lost while it ran
// (cronlock_leases_lost_total); the run's status is "lost", or what the
// job's OnInterrupt policy made of it.
func (m *metrics) leaseLost(name string) {
	m.lost.WithLabelValues(name).Inc()
}

// jobGauges are the gauges describing each registered job as the scheduler
// sees it at the moment of the scrape; a removed job's series go with it.
// Collect and the text exposition (metricstext.go) read the same samples.
type jobGauges struct {
	s        *Scheduler
	families []*gaugeFamily
}

// gaugeFamily is one family of jobGauges. Its labels are "job" and, for
// cronlock_job_info, two more, in name order (the order of the text
// format's label pairs).
type gaugeFamily struct {
	name, help string
	labels     []string
	desc       *prometheus.Desc
	// sample is the job's series at now: the values of the labels after
	// "job", and the value; ok false when the job has none.
	sample func(s *Scheduler, e *entry, now time.Time) (lvs [2]string, v float64, ok bool)
}

func newJobGauges(s *Scheduler) *jobGauges {
	g := &jobGauges{s: s, families: []*gaugeFamily{{
		name: "cronlock_job_next_run_timestamp_seconds",
		help: "Unix time of the job's next scheduled tick, by the scheduler's clock (the NATS server's); absent when the schedule has no further tick.",
		sample: func(_ *Scheduler, e *entry, now time.Time) ([2]string, float64, bool) {
			next := e.nextAfter(now)
			return [2]string{}, float64(next.UnixMilli()) / 1e3, !next.IsZero()
		},
	}, {
		name: "cronlock_job_suspended",
		help: "1 while the job is suspended (by its configuration, or by an operator from any replica, the page or the CLI), else 0.",
		sample: func(s *Scheduler, e *entry, _ time.Time) ([2]string, float64, bool) {
			if !e.job.Suspended && !s.claims.follows(jobOf(e.job.Name)) {
				return [2]string{}, 0, false // its followers report it (followset.go)
			}
			if s.suspended(e) {
				return [2]string{}, 1, true
			}
			return [2]string{}, 0, true
		},
	}, {
		name:   "cronlock_job_info",
		help:   "Always 1; the labels give the job's schedule and time zone as configured.",
		labels: []string{"job", "schedule", "timezone"},
		sample: func(_ *Scheduler, e *entry, _ time.Time) ([2]string, float64, bool) {
			return [2]string{e.job.Spec(), zoneName(e.job.Location)}, 1, true
		},
	}, {
		name: "cronlock_job_interval_seconds",
		help: "The longest time between two consecutive ticks of the job's schedule (sampled over the coming week): the job's interval, for alerts such as no success for twice the interval.",
		sample: func(_ *Scheduler, e *entry, _ time.Time) ([2]string, float64, bool) {
			return [2]string{}, e.interval.Seconds(), e.interval > 0
		},
	}}}
	for _, f := range g.families {
		if f.labels == nil {
			f.labels = []string{"job"}
		}
		f.desc = prometheus.NewDesc(f.name, f.help, f.labels, nil)
	}
	return g
}

func (g *jobGauges) Describe(ch chan<- *prometheus.Desc) {
	for _, f := range g.families {
		ch <- f.desc
	}
}

func (g *jobGauges) Collect(ch chan<- prometheus.Metric) {
	now := g.s.now()
	for _, e := range g.s.entries() {
		for _, f := range g.families {
			lvs, v, ok := f.sample(g.s, e, now)
			if !ok {
				continue
			}
			all := append([]string{e.job.Name}, lvs[:len(f.labels)-1]...)
			ch <- prometheus.MustNewConstMetric(f.desc, prometheus.GaugeValue, v, all...)
		}
	}
}

// nextAfter is the job's next tick after now: the one its loop waits for,
// or, while the loop is busy with a tick that has come (a run, a claim),
// the schedule's next one.
func (e *entry) nextAfter(now time.Time) time.Time {
	e.mu.Lock()
	next := e.next
	e.mu.Unlock()
	if next.After(now) {
		return next
	}
	return e.sched.Next(now)
}

// zoneName is the name of the zone a job's schedule is read in; nil is
// UTC (job.Job.Location). A CRON_TZ= prefix shows in the schedule label.
func zoneName(loc *time.Location) string {
	if loc == nil {
		return time.UTC.String()
	}
	return loc.String()
}

// Sampling of longestGap.
const (
	gapSpan     = 8 * 24 * time.Hour // a week and a day: every weekday's gap
	gapStep     = 3 * time.Hour      // between the points waits are measured from
	gapMinTicks = 3                  // two gaps, for monthly and yearly schedules
)

// longestGap is the longest time between consecutive ticks of sched from
// from on, over gapSpan (or over gapMinTicks ticks for sparser schedules),
// or 0 when it has fewer than two ticks. Using the longest gap keeps "no
// success for twice the interval" from firing over the weekend for a
// weekday job, however often it runs on weekdays. The cost is bounded
// whatever the schedule (an every-second job has 691,200 ticks in the
// span): it measures the wait for the next tick from points gapStep apart,
// then finds where the gap with the longest wait began.
func longestGap(sched job.Schedule, from time.Time) time.Duration {
	var longest time.Duration
	prev := sched.Next(from)
	for n := 1; !prev.IsZero() && n < gapMinTicks; n++ { // the first gaps: sparse schedules
		next := sched.Next(prev)
		if next.IsZero() {
			return longest
		}
		longest, prev = max(longest, next.Sub(prev)), next
	}
	var best, bestAt time.Time // the sample with the longest wait, and that wait's end
	for p := from; p.Before(from.Add(gapSpan)); p = p.Add(gapStep) {
		next := sched.Next(p)
		if next.IsZero() {
			break
		}
		if bestAt.IsZero() || next.Sub(p) > bestAt.Sub(best) {
			best, bestAt = p, next
		}
	}
	if bestAt.IsZero() {
		return longest
	}
	return max(longest, bestAt.Sub(gapStart(sched, best, bestAt)))
}

// gapStart is the tick that begins the gap ending at end, in which at
// lies (Next(at) == end): found by halving, to the second (cron's
// resolution), from gapStep before at, stepping further back (at most a
// span's worth) while that is still inside the gap.
func gapStart(sched job.Schedule, at, end time.Time) time.Time {
	lo := at.Add(-gapStep)
	for n := 0; sched.Next(lo).Equal(end) && n < int(gapSpan/gapStep); n++ {
		at, lo = lo, lo.Add(-gapStep)
	}
	for hi := at; hi.Sub(lo) > time.Second; {
		mid := lo.Add(hi.Sub(lo) / 2)
		if sched.Next(mid).Equal(end) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return sched.Next(lo)
}

// gapCache shares longestGap between the jobs of one schedule (a spec in a
// zone): a replica holding 100,000 jobs spends seconds at start-up in the
// ~80 Next calls of each, while many jobs share a few specs. An entry is
// reused for gapReuse after it was computed: the week it samples moves by
// less than that, and each gap it finds is measured exactly.
type gapCache struct {
	mu    sync.Mutex
	byKey map[string]gapSample
}

type gapSample struct {
	from time.Time
	gap  time.Duration
}

const (
	gapReuse    = time.Minute
	gapCacheMax = 4096 // distinct schedules kept; beyond, it starts anew
)

// longestGap is longestGap(sched, from) for the job's schedule, cached.
func (c *gapCache) longestGap(j job.Job, sched job.Schedule, from time.Time) time.Duration {
	key := j.ScheduleKey() + "\x00" + zoneName(j.Location)
	c.mu.Lock()
	s, ok := c.byKey[key]
	c.mu.Unlock()
	if d := from.Sub(s.from); ok && d < gapReuse && d > -gapReuse {
		return s.gap
	}
	gap := longestGap(sched, from)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byKey == nil || len(c.byKey) >= gapCacheMax {
		c.byKey = map[string]gapSample{}
	}
	c.byKey[key] = gapSample{from: from, gap: gap}
	return gap
}
