package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/scheduler"
)

// anomalyRig is two replicas running one every-second job, with what they
// report through OnResult and their metrics.
type anomalyRig struct {
	url      string
	name     string
	replicas []*replica
	regs     []*prometheus.Registry
	starts   *recorder

	mu      sync.Mutex
	results []scheduler.Run
}

func newAnomalyRig(t *testing.T, name string, suspended bool) *anomalyRig {
	t.Helper()
	g := &anomalyRig{url: natstest.RunServer(t, natstest.Options{}).ClientURL(), name: name, starts: newRecorder()}
	for _, id := range []string{"r1", "r2"} {
		reg := prometheus.NewRegistry()
		r := newReplica(t, g.url, lockOpts(id), scheduler.Options{Registerer: reg, Logger: testLogger(t, id),
			OnResult: func(run scheduler.Run) { g.mu.Lock(); g.results = append(g.results, run); g.mu.Unlock() }})
		addJob(t, r, job.Job{Name: name, Schedule: "* * * * * *", Suspended: suspended, Run: startRecorder(id, g.starts, 0)})
		g.replicas, g.regs = append(g.replicas, r), append(g.regs, reg)
	}
	return g
}

func (g *anomalyRig) start(t *testing.T) {
	for _, r := range g.replicas {
		r.start(t)
	}
}

// notes are the anomaly notes reported through OnResult.
func (g *anomalyRig) notes() []scheduler.Run {
	g.mu.Lock()
	defer g.mu.Unlock()
	return withStatus(g.results, scheduler.StatusAnomaly)
}

// forge writes the job's record with the NATS client directly.
func (g *anomalyRig) forge(t *testing.T, value string, hdr nats.Header) {
	t.Helper()
	_, js := natstest.Connect(t, g.url)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	subject := "$KV." + scheduler.DefaultHistoryBucket + "." + g.name
	if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: []byte(value), Header: hdr}); err != nil {
		t.Fatal(err)
	}
}

// awaitRunAfter waits for a run of a tick after from.
func (g *anomalyRig) awaitRunAfter(t *testing.T, from time.Time, d time.Duration) {
	t.Helper()
	waitFor(t, d, "a run of a tick after the forged record", func() bool {
		for _, x := range g.starts.all() {
			if x.tick.After(from) {
				return true
			}
		}
		return false
	})
}

// A last claimed tick in 2999 (with the header replicas follow, as a forger
// copying a real write would leave it) is not trusted: one replica repairs
// it, once, with a note in the history, a warn, the counter and OnResult;
// the job runs again at its next tick.
func TestForgedFutureTickIsRepaired(t *testing.T) {
	t.Parallel()
	g := newAnomalyRig(t, "forged", false)
	g.start(t)
	g.starts.next(t, 10*time.Second)
	const forged = "2999-01-01T00:00:00Z"
	g.forge(t, `{"last_tick":"`+forged+`","runs":[],"seq":1000}`, nats.Header{"Cronlock-Last-Tick": []string{forged}})
	forgedAt := time.Now()
	g.awaitRunAfter(t, forgedAt.Add(time.Second), 10*time.Second)
	waitFor(t, 5*time.Second, "the anomaly counted", func() bool {
		return metricSum(t, "cronlock_state_anomalies_total", map[string]string{"job": "forged", "kind": string(scheduler.AnomalyFutureTick)}, g.regs...) == 1
	})
	time.Sleep(1500 * time.Millisecond) // more ticks: the repair is not repeated
	if n := metricSum(t, "cronlock_state_anomalies_total", map[string]string{"kind": string(scheduler.AnomalyFutureTick)}, g.regs...); n != 1 {
		t.Errorf("cronlock_state_anomalies_total{kind=future_tick} = %v, want 1", n)
	}
	notes := g.notes()
	if len(notes) != 1 || notes[0].Reason != scheduler.AnomalyFutureTick || !strings.Contains(notes[0].Error, "2999-01-01T00:00:00Z") {
		t.Fatalf("anomaly notes reported = %+v, want one future_tick naming the forged tick", notes)
	}
	runs := runsOf(t, g.replicas[0], "forged")
	if got := withStatus(runs, scheduler.StatusAnomaly); len(got) != 1 || got[0].ID != 1001 {
		t.Errorf("history's anomaly entries = %+v, want one with ID 1001 (numbered on from the record's seq)", got)
	}
	if got := withStatus(runs, scheduler.StatusMissed); len(got) != 0 {
		t.Errorf("missed entries after the repair = %+v, want none", got)
	}
	if metricSum(t, "cronlock_state_anomalies_total", map[string]string{"kind": string(scheduler.AnomalyCorrupt)}, g.regs...) != 0 {
		t.Error("a future tick counted as corrupt")
	}
}

// A record that is not JSON breaks only that job's record: State says it
// is corrupt (a *CorruptError); a replica rewrites it, once, keeping the
// old bytes under "<job>/corrupt/<rev>", and the job runs again.
func TestCorruptRecordIsRepaired(t *testing.T) {
	t.Parallel()
	g := newAnomalyRig(t, "broken", false)
	ctx := context.Background()
	_, js := natstest.Connect(t, g.url)
	h, err := scheduler.OpenHistory(ctx, js, scheduler.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g.forge(t, "{not json", nil) // before the replicas start: the views see it
	var bad *scheduler.CorruptError
	if _, err := h.State(ctx, "broken"); !errors.As(err, &bad) || bad.Job != "broken" {
		t.Fatalf("State of a corrupt record: %v, want a *CorruptError for the job", err)
	}
	if _, err := h.State(ctx, "other"); err != nil {
		t.Errorf("State of another job: %v", err)
	}
	g.start(t)
	g.starts.next(t, 10*time.Second)
	waitFor(t, 5*time.Second, "the anomaly counted", func() bool {
		return metricSum(t, "cronlock_state_anomalies_total", map[string]string{"job": "broken", "kind": string(scheduler.AnomalyCorrupt)}, g.regs...) == 1
	})
	st, err := h.State(ctx, "broken")
	if err != nil {
		t.Fatalf("State after the repair: %v", err)
	}
	notes := withStatus(st.Runs, scheduler.StatusAnomaly)
	if len(notes) != 1 || notes[0].Reason != scheduler.AnomalyCorrupt {
		t.Fatalf("history after the repair: %+v, want one corrupt note", st.Runs)
	}
	kv, err := js.KeyValue(ctx, scheduler.DefaultHistoryBucket)
	if err != nil {
		t.Fatal(err)
	}
	key := fmt.Sprintf("broken/corrupt/%d", bad.Revision)
	if e, err := kv.Get(ctx, key); err != nil || string(e.Value()) != "{not json" {
		t.Errorf("kept copy under %q: %v, %v; want the old bytes", key, e, err)
	}
	if len(g.notes()) != 1 {
		t.Errorf("notes reported = %+v, want 1", g.notes())
	}
}

// JSON of another shape is rewritten from what can be read: the runs that
// decode, the entry numbering (seq) and an operator's suspension, which
// must not lapse because the record broke.
func TestCorruptRecordIsSalvaged(t *testing.T) {
	t.Parallel()
	g := newAnomalyRig(t, "shaped", false)
	tick := time.Now().Add(-time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)
	g.forge(t, `{"last_tick":"`+tick+`","seq":40,"suspended":{"at":"`+tick+`","by":"ops"},"runs":[`+
		`{"job":"shaped","id":40,"tick":"`+tick+`","status":"succeeded"},7]}`, nil)
	g.start(t)
	waitFor(t, 10*time.Second, "the repair and a skipped tick", func() bool {
		runs, err := g.replicas[0].s.History(context.Background(), "shaped")
		return err == nil && len(withStatus(runs, scheduler.StatusSkipped)) > 0
	})
	runs := runsOf(t, g.replicas[0], "shaped")
	notes := withStatus(runs, scheduler.StatusAnomaly)
	if len(notes) != 1 || notes[0].ID != 41 || notes[0].Reason != scheduler.AnomalyCorrupt {
		t.Fatalf("notes = %+v, want one corrupt note with ID 41", notes)
	}
	if got := withStatus(runs, scheduler.StatusSucceeded); len(got) != 1 || got[0].ID != 40 {
		t.Errorf("salvaged runs = %+v, want the succeeded run 40", got)
	}
	if x := g.starts.all(); len(x) != 0 {
		t.Errorf("the suspended job ran after the repair: %+v", x)
	}
}
