package scheduler

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// jobCounters keeps the per-job counters that exist at 0 for every job
// from its Add (jobAdded): cronlock_runs_total by status,
// cronlock_ticks_missed_total by reason, cronlock_leases_lost_total,
// cronlock_state_anomalies_total by kind and
// cronlock_job_definition_conflicts_total. A job's are one block of atomic
// integers, exposed at scrape time: as CounterVec children they cost
// ~450 bytes a series, 14 series a job, 630 MB at 100,000 jobs. A label
// value outside the known ones (none is today) is counted in a CounterVec
// that the same collector exposes, so no increment is lost. A removed job's
// counters are kept, as the metrics.go contract says.
type jobCounters struct {
	mu   sync.RWMutex
	jobs map[string]*jobCount

	families []*counterFamily // in the order of a jobCount's blocks
}

// counterFamily is one metric of jobCounters: labelled by job, and by a
// second label whose values are known up front when values is not nil.
type counterFamily struct {
	name, help string
	labels     []string // "job" and the second label, if any
	desc       *prometheus.Desc
	values     []string // the second label's known values ([""] without one)
	labelled   bool     // it has a second label
	offset     int      // of the family's block in jobCount.n
	other      *prometheus.CounterVec
}

// jobCount is one job's counters, every family's block in turn.
type jobCount struct{ n []atomic.Uint64 }

// jobCounter is one series of a family, as CounterVec.WithLabelValues
// returns it.
type jobCounter struct {
	n     *atomic.Uint64
	other prometheus.Counter // a series outside the known values
}

func (c jobCounter) Inc() { c.Add(1) }

// Add adds v, a whole number of events.
func (c jobCounter) Add(v float64) {
	if c.other != nil {
		c.other.Add(v)
		return
	}
	c.n.Add(uint64(v))
}

// newCounterFamily describes a family of jobCounters; label is the second
// label ("" for none) with its known values.
func newCounterFamily[V ~string](name, help, label string, values []V) *counterFamily {
	labels := []string{"job"}
	strs := []string{""}
	if label != "" {
		labels = append(labels, label)
		strs = make([]string, len(values))
		for i, v := range values {
			strs[i] = string(v)
		}
	}
	return &counterFamily{
		name: name, help: help, labels: labels,
		desc:     prometheus.NewDesc(name, help, labels, nil),
		values:   strs,
		labelled: label != "",
		other:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels),
	}
}

func newJobCounters(families ...*counterFamily) *jobCounters {
	n := 0
	for _, f := range families {
		f.offset = n
		n += len(f.values)
	}
	return &jobCounters{jobs: map[string]*jobCount{}, families: families}
}

// add creates the job's counters at 0, if it has none yet.
func (c *jobCounters) add(name string) *jobCount {
	c.mu.RLock()
	jc := c.jobs[name]
	c.mu.RUnlock()
	if jc != nil {
		return jc
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if jc = c.jobs[name]; jc == nil {
		last := c.families[len(c.families)-1]
		jc = &jobCount{n: make([]atomic.Uint64, last.offset+len(last.values))}
		c.jobs[name] = jc
	}
	return jc
}

// with is f's series for the job and, if f has one, the second label.
func (c *jobCounters) with(f *counterFamily, lvs ...string) jobCounter {
	second := ""
	if len(lvs) > 1 {
		second = lvs[1]
	}
	i := slices.Index(f.values, second)
	if i < 0 {
		return jobCounter{other: f.other.WithLabelValues(lvs...)}
	}
	return jobCounter{n: &c.add(lvs[0]).n[f.offset+i]}
}

func (c *jobCounters) Describe(ch chan<- *prometheus.Desc) {
	for _, f := range c.families {
		ch <- f.desc
	}
}

func (c *jobCounters) Collect(ch chan<- prometheus.Metric) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for name, jc := range c.jobs {
		for _, f := range c.families {
			for i, v := range f.values {
				n := float64(jc.n[f.offset+i].Load())
				if !f.labelled {
					ch <- prometheus.MustNewConstMetric(f.desc, prometheus.CounterValue, n, name)
					continue
				}
				ch <- prometheus.MustNewConstMetric(f.desc, prometheus.CounterValue, n, name, v)
			}
		}
	}
	for _, f := range c.families {
		f.other.Collect(ch)
	}
}

// jobCounterVec is one family of jobCounters, used as a CounterVec.
type jobCounterVec struct {
	c *jobCounters
	f *counterFamily
}

func (v jobCounterVec) WithLabelValues(lvs ...string) jobCounter { return v.c.with(v.f, lvs...) }
