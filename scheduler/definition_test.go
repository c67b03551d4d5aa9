package scheduler_test

import (
	"github.com/cronlock/cronlock/internal/testlog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/scheduler"
)

const conflictMsg = "another definition of this job writes this job's shared record"

// definitionPair starts two replicas on one server, each with the job
// "report" every second under its definition, logging as JSON to logs.
func definitionPair(t *testing.T, defs [2]string) (*jobRuns, [2]*prometheus.Registry, [2]*testlog.Buffer) {
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	runs := newJobRuns()
	var regs [2]*prometheus.Registry
	var logs [2]*testlog.Buffer
	for i, id := range []string{"r1", "r2"} {
		regs[i], logs[i] = prometheus.NewRegistry(), &testlog.Buffer{}
		r := newReplica(t, url, lockOpts(id), scheduler.Options{Registerer: regs[i], Logger: zerolog.New(logs[i])})
		addJob(t, r, job.Job{Name: "report", Schedule: "* * * * * *", Definition: defs[i], Run: runs.record(id, 0)})
		r.start(t)
	}
	return runs, regs, logs
}

// A job's shared record written by replicas with different definitions of
// it: each replica counts the ticks claimed under the other's and warns
// once per (job, other definition).
func TestDefinitionConflict(t *testing.T) {
	t.Parallel()
	_, regs, logs := definitionPair(t, [2]string{"cmd-a", "cmd-b"})
	conflicts := func() float64 {
		return metricSum(t, "cronlock_job_definition_conflicts_total", map[string]string{"job": "report"}, regs[0], regs[1])
	}
	waitFor(t, 15*time.Second, "3 conflicts counted", func() bool { return conflicts() >= 3 })
	warned := 0
	for i, l := range logs {
		n := strings.Count(l.String(), conflictMsg)
		if n > 1 {
			t.Errorf("replica %d warned %d times, want once per (job, other definition):\n%s", i, n, l)
		}
		if n == 1 && (!strings.Contains(l.String(), `"level":"warn"`) || !strings.Contains(l.String(), `"other_definition":"cmd-`)) {
			t.Errorf("replica %d: want a warn line naming the other definition:\n%s", i, l)
		}
		warned += n
	}
	if warned == 0 {
		t.Errorf("%v conflicts counted, no warning logged", conflicts())
	}
}

// Replicas with one definition: no conflict, whatever the ticks' spread.
func TestDefinitionSame(t *testing.T) {
	t.Parallel()
	runs, regs, logs := definitionPair(t, [2]string{"same", "same"})
	waitFor(t, 15*time.Second, "4 runs", func() bool { return len(runs.all()) >= 4 })
	for i := range regs {
		if got := metricSum(t, "cronlock_job_definition_conflicts_total", map[string]string{"job": "report"}, regs[i]); got != 0 {
			t.Errorf("replica %d: %v conflicts, want 0", i, got)
		}
		if strings.Contains(logs[i].String(), conflictMsg) {
			t.Errorf("replica %d warned of a conflict:\n%s", i, logs[i])
		}
	}
	if !hasSeries(t, regs[0], "cronlock_job_definition_conflicts_total") {
		t.Error("cronlock_job_definition_conflicts_total{job=\"report\"} is not exported at 0")
	}
}

// hasSeries reports whether reg exports a series called name.
func hasSeries(t *testing.T, reg *prometheus.Registry, name string) bool {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) > 0 {
			return true
		}
	}
	return false
}

// A definition that cannot go into a NATS header is refused by Add.
func TestDefinitionRefused(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	r := newReplica(t, url, lockOpts("r"), scheduler.Options{})
	for _, d := range []string{"two words", "line\nbreak", strings.Repeat("x", 129)} {
		err := r.s.Add(job.Job{Name: "j", Schedule: "@hourly", Definition: d, Run: newJobRuns().record("r", 0)})
		if err == nil || !strings.Contains(err.Error(), "definition") {
			t.Errorf("Add with definition %q: %v, want an error naming the definition", d, err)
		}
	}
}
