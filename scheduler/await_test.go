package scheduler_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/scheduler"
)

// pollEvery is how often waitFor checks its condition.
const pollEvery = 20 * time.Millisecond

// waitFor polls cond until it holds, failing the test after d with what.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(pollEvery)
	}
}

// addJob adds j to the replica's scheduler or fails the test.
func addJob(t *testing.T, r *replica, j job.Job) {
	t.Helper()
	if err := r.s.Add(j); err != nil {
		t.Fatal(err)
	}
}

// startRecorder is a job function that records its start (replica, tick,
// attempt, time.Now()) in runs, then sleeps d or until its context ends.
func startRecorder(name string, runs *recorder, d time.Duration) func(context.Context) error {
	return func(ctx context.Context) error {
		start := time.Now()
		info, _ := job.FromContext(ctx)
		runs.add(rec{replica: name, tick: info.Tick, token: info.Token, attempt: info.Attempt, start: start})
		if d <= 0 {
			return nil
		}
		select {
		case <-time.After(d):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// runsOf reads the job's shared history (newest first) or fails the test.
func runsOf(t *testing.T, r *replica, name string) []scheduler.Run {
	t.Helper()
	h, err := r.s.History(context.Background(), name)
	if err != nil {
		t.Fatalf("History(%s): %v", name, err)
	}
	return h
}

// withStatus returns the entries with the given status, in the order given.
func withStatus(runs []scheduler.Run, status scheduler.RunStatus) []scheduler.Run {
	var out []scheduler.Run
	for _, r := range runs {
		if r.Status == status {
			out = append(out, r)
		}
	}
	return out
}

// metricSum adds up, across registries, the counters and gauges called
// name whose labels include labels; 0 when there are none (a counter not
// yet incremented is not exported).
func metricSum(t *testing.T, name string, labels map[string]string, regs ...*prometheus.Registry) float64 {
	t.Helper()
	var sum float64
	for _, reg := range regs {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
			for _, m := range mf.GetMetric() {
				if !hasLabels(m.GetLabel(), labels) {
					continue
				}
				sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	return sum
}

func hasLabels(got []*dto.LabelPair, want map[string]string) bool {
	n := 0
	for _, lp := range got {
		if v, ok := want[lp.GetName()]; ok {
			if v != lp.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(want)
}

// jobRun is a run's start as its job function saw it, in a test with
// several jobs.
type jobRun struct {
	replica, job string
	tick, start  time.Time
}

// jobRuns collects jobRuns from the job functions of several jobs.
type jobRuns struct {
	mu   sync.Mutex
	runs []jobRun
	ch   chan jobRun
}

func newJobRuns() *jobRuns { return &jobRuns{ch: make(chan jobRun, 1000)} }

// record is a job function that records its start on replica, then
// sleeps d.
func (j *jobRuns) record(replica string, d time.Duration) func(context.Context) error {
	return func(ctx context.Context) error {
		start := time.Now()
		info, _ := job.FromContext(ctx)
		x := jobRun{replica: replica, job: info.Job, tick: info.Tick, start: start}
		j.mu.Lock()
		j.runs = append(j.runs, x)
		j.mu.Unlock()
		select {
		case j.ch <- x:
		default:
		}
		time.Sleep(d)
		return nil
	}
}

func (j *jobRuns) all() []jobRun {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.runs)
}

// next waits for the next run to start.
func (j *jobRuns) next(t *testing.T, d time.Duration) jobRun {
	t.Helper()
	select {
	case x := <-j.ch:
		return x
	case <-time.After(d):
		t.Fatalf("no run within %v", d)
		return jobRun{}
	}
}

// jobState returns a reader of the job's shared record, through a
// connection of its own straight to the server at url (past any proxy the
// replicas go through), and the History it reads with.
func jobState(t *testing.T, url, name string) (func() scheduler.JobState, *scheduler.History) {
	t.Helper()
	ctx := context.Background()
	_, js := natstest.Connect(t, url)
	h, err := scheduler.OpenHistory(ctx, js, scheduler.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return func() scheduler.JobState {
		st, err := h.State(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}, h
}
