package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/scheduler"
)

// Forged and corrupt records written with the NATS client directly (issue
// 19 §4), against the built binary: a last claimed tick in 2999 is not
// trusted (the job runs again at its next tick, one anomaly notification,
// the counter); a record that is not JSON marks only its job corrupt in
// /api/jobs and `cronlock status --json`, then is repaired and the job
// runs again.
func TestForgedAndCorruptRecords(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	dir := t.TempDir()
	cfg := writeFile(t, dir, "cronlock.yaml", fmt.Sprintf(`
nats: {url: %s}
lock: {lease: 2s, renew: 500ms, owner: r1}
http: {listen: "127.0.0.1:0"}
notify:
  - command: ["sh", "-c", "cat >> notes.jsonl; echo >> notes.jsonl"]
    on: [anomaly]
jobs:
  - name: forged
    schedule: "* * * * * *"
    shell: echo "$CRONLOCK_TICK" >> forged.ticks
  - name: broken
    schedule: "*/5 * * * * *"
    shell: echo "$CRONLOCK_TICK" >> broken.ticks
  - name: fine
    schedule: "* * * * * *"
    shell: "true"
`, url))
	d := startDaemon(t, dir, cfg)
	running(d)
	_, js := natstest.Connect(t, url)
	forge := func(job, value string, hdr nats.Header) time.Time {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := js.PublishMsg(ctx, &nats.Msg{Subject: "$KV." + scheduler.DefaultHistoryBucket + "." + job, Data: []byte(value), Header: hdr})
		if err != nil {
			t.Fatal(err)
		}
		return time.Now()
	}

	// A forged future tick.
	awaitSucceeded(t, url, "forged")
	at := forge("forged", `{"last_tick":"2999-01-01T00:00:00Z","runs":[]}`, nats.Header{"Cronlock-Last-Tick": []string{"2999-01-01T00:00:00Z"}})
	awaitTickAfter(t, filepath.Join(dir, "forged.ticks"), at, 10*time.Second) // the bound: its next tick
	awaitNote(t, dir, "forged", string(scheduler.AnomalyFutureTick))
	if v := metricValue(t, d.metrics(), "cronlock_state_anomalies_total", map[string]string{"job": "forged", "kind": "future_tick"}); v != 1 {
		t.Errorf("cronlock_state_anomalies_total{job=forged,kind=future_tick} = %v, want 1", v)
	}

	// A corrupt record, written just after a tick of the 5 s job: the
	// views have until its next tick to show it.
	awaitSucceeded(t, url, "broken")
	at = forge("broken", "{not json", nil)
	jobs := apiJobs(t, d)
	for _, name := range []string{"forged", "broken", "fine"} {
		j, ok := jobs[name]
		switch {
		case !ok:
			t.Errorf("/api/jobs lacks %s: %v", name, jobs)
		case name == "broken" && (j["state"] != "corrupt" || !strings.Contains(fmt.Sprint(j["error"]), "not a job state")):
			t.Errorf("/api/jobs: broken = %v, want state corrupt and the error", j)
		case name != "broken" && j["state"] != nil:
			t.Errorf("/api/jobs: %s = %v, want no state", name, j)
		}
	}
	if j := apiJob(t, d, "broken"); j["state"] != "corrupt" || j["lock"] != nil {
		t.Errorf("/api/jobs/broken = %v, want state corrupt and no lock", j)
	}
	r := cronlock(t, nil, "status", "--json", "-n", "1", "-c", cfg)
	var st []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &st); r.code != 0 || err != nil || len(st) != 3 {
		t.Fatalf("status --json: exit %d, %v:\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	for _, s := range st {
		corrupt := s["state"] == "corrupt" && s["error"] != nil
		if corrupt != (s["job"] == "broken") {
			t.Errorf("status --json: %v; want only broken corrupt", s)
		}
	}
	awaitTickAfter(t, filepath.Join(dir, "broken.ticks"), at, 15*time.Second)
	awaitNote(t, dir, "broken", string(scheduler.AnomalyCorrupt))
	if v := metricValue(t, d.metrics(), "cronlock_state_anomalies_total", map[string]string{"job": "broken", "kind": "corrupt"}); v != 1 {
		t.Errorf("cronlock_state_anomalies_total{job=broken,kind=corrupt} = %v, want 1", v)
	}
	if r := cronlock(t, nil, "status", "-c", cfg, "broken"); r.code != 0 || !strings.Contains(r.stdout, "anomaly") {
		t.Errorf("status broken after the repair: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// awaitSucceeded waits until the job's newest entry is a success.
func awaitSucceeded(t *testing.T, url, job string) {
	t.Helper()
	waitFor(t, 15*time.Second, job+" succeeded", func() bool {
		runs := historyOf(t, url, job)
		return len(runs) > 0 && runs[0].Status == scheduler.StatusSucceeded
	})
}

// awaitTickAfter waits until the ticks file has a tick after at.
func awaitTickAfter(t *testing.T, path string, at time.Time, d time.Duration) {
	t.Helper()
	waitFor(t, d, "a run of a tick after "+at.Format(time.RFC3339Nano)+" in "+filepath.Base(path), func() bool {
		for _, l := range fileLines(t, path) {
			if tick, err := time.Parse(time.RFC3339, strings.TrimSpace(l)); err == nil && tick.After(at) {
				return true
			}
		}
		return false
	})
}

// awaitNote waits for the job's one anomaly notification of kind.
func awaitNote(t *testing.T, dir, job, kind string) {
	t.Helper()
	waitFor(t, 10*time.Second, "the anomaly notification of "+job, func() bool {
		n := 0
		for _, note := range notes(t, dir) {
			if note["job"] == job {
				if note["event"] != "anomaly" || note["status"] != "anomaly" || note["reason"] != kind {
					t.Fatalf("notification %v: want event and status anomaly, reason %s", note, kind)
				}
				n++
			}
		}
		if n > 1 {
			t.Fatalf("%d anomaly notifications of %s, want 1", n, job)
		}
		return n == 1
	})
}

// apiJobs reads GET /api/jobs by job name.
func apiJobs(t *testing.T, d *daemon) map[string]map[string]any {
	t.Helper()
	resp, err := http.Get(httpBase(t, d) + "/api/jobs")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct{ Jobs []map[string]any }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/api/jobs: %s, %v", resp.Status, err)
	}
	out := map[string]map[string]any{}
	for _, j := range body.Jobs {
		out[fmt.Sprint(j["name"])] = j
	}
	return out
}

// apiJob is the daemon's GET /api/jobs/{name}, which must answer 200.
func apiJob(t *testing.T, d *daemon, name string) map[string]any {
	t.Helper()
	resp, err := http.Get(httpBase(t, d) + "/api/jobs/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var j map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&j); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/api/jobs/%s: %s, %v", name, resp.Status, err)
	}
	return j
}
