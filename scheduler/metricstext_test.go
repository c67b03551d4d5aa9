package scheduler_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/scheduler"
)

// jobFamilies are the families that exist for every job, which
// Options.StreamJobMetrics takes off the registry.
var jobFamilies = []string{
	"cronlock_job_definition_conflicts_total", "cronlock_job_info", "cronlock_job_interval_seconds",
	"cronlock_job_next_run_timestamp_seconds", "cronlock_job_suspended", "cronlock_leases_lost_total",
	"cronlock_runs_total", "cronlock_state_anomalies_total", "cronlock_ticks_missed_total",
}

// TestJobMetricFamiliesMatchGather: the per-job families written by
// JobMetricFamily.WriteText are what Gather and expfmt give for the same
// scheduler, byte for byte and parsed (same families, HELP, TYPE, series,
// values): with counters that ran, a failing job, a removed job (its
// counters stay), a suspended job, and a time zone whose name needs the
// text format's escaping. With StreamJobMetrics, the registry has none of
// them and keeps the others.
func TestJobMetricFamiliesMatchGather(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	reg := prometheus.NewRegistry()
	r := newReplica(t, url, lockOpts("mt1"), scheduler.Options{Registerer: reg, Logger: testLogger(t, "mt1")})
	noop := func(context.Context) error { return nil }
	odd := time.FixedZone("back\\slash \"quoted\"\nline", 3600)
	addJob(t, r, job.Job{Name: "beat.ok", Schedule: "* * * * * *", Run: noop})
	addJob(t, r, job.Job{Name: "beat.fail", Schedule: "* * * * * *", Run: func(context.Context) error { return errors.New("no") }})
	addJob(t, r, job.Job{Name: "gone", Schedule: "* * * * * *", Run: noop})
	addJob(t, r, job.Job{Name: "odd-zone", Schedule: "@every 1h", Location: odd, Run: noop})
	addJob(t, r, job.Job{Name: "off_daily", Schedule: "0 3 * * *", Suspended: true, Run: noop})
	r.start(t)
	waitFor(t, 10*time.Second, "runs of beat.ok, beat.fail and gone", func() bool {
		runs := series(t, reg, "cronlock_runs_total")
		return runs[`job="beat.ok",status="succeeded"`] >= 1 && runs[`job="beat.fail",status="failed"`] >= 1 &&
			runs[`job="gone",status="succeeded"`] >= 1
	})
	for _, name := range []string{"gone", "beat.ok", "beat.fail"} {
		if err := r.s.Remove(name); err != nil { // its counters stay, its gauges go
			t.Fatal(err)
		}
	}
	// A removed job's run may still finish: compare once the counters
	// have settled (the jobs left tick hourly or daily).
	var streamed, want map[string]string
	var gathered map[string]*dto.MetricFamily
	var all bytes.Buffer
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(pollEvery) {
		all.Reset()
		streamed = writeFamilies(t, r.s, &all)
		gathered, want = gatherFamilies(t, reg)
		if maps.Equal(streamed, want) || time.Now().After(deadline) {
			break
		}
	}
	for _, name := range jobFamilies {
		if streamed[name] != want[name] {
			t.Errorf("%s streamed:\n%s\nGather and expfmt:\n%s", name, streamed[name], want[name])
		}
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	parsed, err := parser.TextToMetricFamilies(bytes.NewReader(all.Bytes()))
	if err != nil {
		t.Fatalf("parse the streamed families: %v\n%s", err, all.String())
	}
	if got, want := flatten(parsed), flatten(gathered); !slices.Equal(got, want) {
		t.Errorf("streamed families parse to\n%s\nwant (Gather)\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, want := range []string{
		`cronlock_job_info{job="odd-zone",schedule="@every 1h",timezone="back\\slash \"quoted\"\nline"} 1`,
		`cronlock_job_suspended{job="off_daily"} 1`,
		`cronlock_runs_total{job="gone",status="succeeded"}`,
	} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("the streamed families lack %s:\n%s", want, all.String())
		}
	}
	if strings.Contains(streamed["cronlock_job_info"], `"gone"`) {
		t.Errorf("cronlock_job_info keeps the removed job:\n%s", streamed["cronlock_job_info"])
	}

	reg2 := prometheus.NewRegistry()
	r2 := newReplica(t, url, lockOpts("mt2"), scheduler.Options{Registerer: reg2, StreamJobMetrics: true, Logger: testLogger(t, "mt2")})
	addJob(t, r2, job.Job{Name: "beat.ok", Schedule: "@every 1h", Run: noop})
	mfs, err := reg2.Gather()
	if err != nil {
		t.Fatal(err)
	}
	have := []string{}
	for _, mf := range mfs {
		have = append(have, mf.GetName())
	}
	for _, name := range jobFamilies {
		if slices.Contains(have, name) {
			t.Errorf("with StreamJobMetrics the registry still has %s", name)
		}
	}
	if !slices.Contains(have, "cronlock_live_replicas") {
		t.Errorf("with StreamJobMetrics the registry lacks cronlock_live_replicas: %v", have)
	}
	var b bytes.Buffer
	for _, f := range r2.s.JobMetricFamilies() {
		if err := f.WriteText(&b); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(b.String(), `cronlock_runs_total{job="beat.ok",status="failed"} 0`) {
		t.Errorf("with StreamJobMetrics, WriteText lacks the job's zeros:\n%s", b.String())
	}
}

// flatten lists every family's HELP and TYPE and every series with its
// value, one line each, sorted.
func flatten(mfs map[string]*dto.MetricFamily) []string {
	var out []string
	for name, mf := range mfs {
		out = append(out, fmt.Sprintf("%s HELP %q TYPE %s", name, mf.GetHelp(), mf.GetType()))
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, lp := range m.GetLabel() {
				ls = append(ls, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
			}
			sort.Strings(ls)
			out = append(out, fmt.Sprintf("%s{%s} %v", name, strings.Join(ls, ","), m.GetCounter().GetValue()+m.GetGauge().GetValue()))
		}
	}
	sort.Strings(out)
	return out
}

// writeFamilies writes every JobMetricFamily of s to all, and returns
// each one's text by name, failing unless they are the jobFamilies.
func writeFamilies(t *testing.T, s *scheduler.Scheduler, all *bytes.Buffer) map[string]string {
	t.Helper()
	var names []string
	out := map[string]string{}
	for _, f := range s.JobMetricFamilies() {
		var b bytes.Buffer
		if err := f.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		names, out[f.Name] = append(names, f.Name), b.String()
		all.Write(b.Bytes())
	}
	if !slices.Equal(names, jobFamilies) {
		t.Fatalf("JobMetricFamilies = %v, want %v", names, jobFamilies)
	}
	return out
}

// gatherFamilies returns the jobFamilies of reg, and the text that expfmt
// makes of each ("" for a family absent).
func gatherFamilies(t *testing.T, reg *prometheus.Registry) (map[string]*dto.MetricFamily, map[string]string) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	gathered, text := map[string]*dto.MetricFamily{}, map[string]string{}
	for _, name := range jobFamilies {
		text[name] = ""
	}
	for _, mf := range mfs {
		if !slices.Contains(jobFamilies, mf.GetName()) {
			continue
		}
		var b bytes.Buffer
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatal(err)
		}
		gathered[mf.GetName()], text[mf.GetName()] = mf, b.String()
	}
	return gathered, text
}
