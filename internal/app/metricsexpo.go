package app

import (
	"bufio"
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/cronlock/cronlock/scheduler"
)

// metricsExposition serves /metrics in the Prometheus text format: the
// registry's families through expfmt, and the scheduler's per-job ones
// (Options.StreamJobMetrics keeps them off the registry) written straight
// to the response, each at its place in name order, as promhttp would
// have sorted them. Gathering those would build every job's ~18 series in
// memory at each scrape: at 100,000 jobs, 1.8 million series, a gigabyte.
// It is promhttp.HandlerFor's text path otherwise: gzip when asked for,
// the name[] filter, promhttp_metric_handler_errors_total. It offers no
// protobuf: every Prometheus accepts the text format.
type metricsExposition struct {
	gather prometheus.Gatherer
	jobs   func() []scheduler.JobMetricFamily // nil or empty before the scheduler opens
	errs   *prometheus.CounterVec             // by cause: gathering, encoding
}

// exposeBufferSize buffers the writes of the exposition to the response
// (or to its gzip writer).
const exposeBufferSize = 64 << 10

// metricsHandler serves the daemon's Prometheus registry and the
// scheduler's per-job families.
func (d *Daemon) metricsHandler() http.Handler {
	return &metricsExposition{gather: d.reg, jobs: d.jobMetricFamilies, errs: handlerErrors(d.reg)}
}

// jobMetricFamilies are the scheduler's per-job families, none before it
// opens.
func (d *Daemon) jobMetricFamilies() []scheduler.JobMetricFamily {
	d.mu.Lock()
	s := d.sched
	d.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.JobMetricFamilies()
}

// handlerErrors is promhttp's counter of the handler's errors, registered
// on reg once for both listeners' handlers, as promhttp.HandlerFor does
// with HandlerOpts.Registry.
func handlerErrors(reg prometheus.Registerer) *prometheus.CounterVec {
	errs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "promhttp_metric_handler_errors_total",
		Help: "Total number of internal errors encountered by the promhttp metric handler.",
	}, []string{"cause"})
	errs.WithLabelValues("gathering")
	errs.WithLabelValues("encoding")
	if err := reg.Register(errs); err != nil {
		if are := (prometheus.AlreadyRegisteredError{}); errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
				return existing
			}
		}
		// Another collector of that name: count without exposing.
	}
	return errs
}

func (m *metricsExposition) ServeHTTP(rsp http.ResponseWriter, req *http.Request) {
	mfs, err := m.gather.Gather()
	if err != nil {
		m.errs.WithLabelValues("gathering").Inc()
		http.Error(rsp, "An error has occurred while serving metrics:\n\n"+err.Error(), http.StatusInternalServerError)
		return
	}
	format := expfmt.NegotiateAccept(req.Header, expfmt.FmtText)
	h := rsp.Header()
	h.Add("Vary", "Accept")
	h.Add("Vary", "Accept-Encoding")
	h.Set("Content-Type", string(format))
	var out io.Writer = rsp
	if acceptsGzip(req.Header.Get("Accept-Encoding")) {
		h.Set("Content-Encoding", "gzip")
		gz := gzip.NewWriter(rsp)
		defer gz.Close()
		out = gz
	}
	w := bufio.NewWriterSize(out, exposeBufferSize)
	if err := m.write(w, format, mfs, nameFilter(req)); err == nil {
		err = w.Flush()
	}
	if err != nil {
		m.errs.WithLabelValues("encoding").Inc()
	}
}

// write writes the gathered families and the per-job ones in name order,
// those keep selects. It stops at the first error (a client gone).
func (m *metricsExposition) write(w *bufio.Writer, format expfmt.Format, mfs []*dto.MetricFamily, keep func(string) bool) error {
	enc := expfmt.NewEncoder(w, format)
	jobs := m.jobs()
	for len(mfs) > 0 || len(jobs) > 0 {
		if len(jobs) == 0 || (len(mfs) > 0 && mfs[0].GetName() < jobs[0].Name) {
			mf := mfs[0]
			mfs = mfs[1:]
			if !keep(mf.GetName()) {
				continue
			}
			if err := enc.Encode(mf); err != nil {
				return err
			}
			continue
		}
		f := jobs[0]
		jobs = jobs[1:]
		if !keep(f.Name) {
			continue
		}
		if err := f.WriteText(w); err != nil {
			return err
		}
	}
	return nil
}

// nameFilter keeps the families that the request's name[] parameters
// name, or all when there is none (promhttp's filter).
func nameFilter(req *http.Request) func(string) bool {
	names := req.URL.Query()["name[]"]
	if len(names) == 0 {
		return func(string) bool { return true }
	}
	set := map[string]bool{}
	for _, n := range names {
		set[n] = true
	}
	return func(name string) bool { return set[name] }
}

// acceptsGzip reports whether an Accept-Encoding header prefers gzip to
// identity, as promhttp negotiates between the two: the highest quality
// wins, identity on a tie, "*" stands for either.
func acceptsGzip(header string) bool {
	best, bestQ := "identity", -1.0
	for _, offer := range []string{"identity", "gzip"} {
		for _, spec := range strings.Split(header, ",") {
			value, params, _ := strings.Cut(spec, ";")
			value = strings.ToLower(strings.TrimSpace(value))
			q := 1.0
			if p := strings.TrimSpace(params); strings.HasPrefix(p, "q=") {
				if v, err := strconv.ParseFloat(strings.TrimPrefix(p, "q="), 64); err == nil {
					q = v
				}
			}
			if value != "" && q > bestQ && (value == "*" || value == offer) {
				best, bestQ = offer, q
			}
		}
	}
	return best == "gzip" && bestQ > 0
}
