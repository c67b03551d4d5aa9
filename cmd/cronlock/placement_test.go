package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
)

// placementConfig is a replica labelled labels with four jobs: "batch"
// (on_replicas role: batch), "gpu" (role: gpu, which no replica has),
// "local" (run_on: every_replica, every second) and "stuck" (every
// replica, a run of 30 s, for cancel).
func placementConfig(t *testing.T, dir, url, owner, labels string) string {
	t.Helper()
	return writeFile(t, dir, owner+".yaml", fmt.Sprintf(`
nats: {url: %s}
lock: {lease: 2s, renew: 500ms, owner: %s}
http: {listen: "127.0.0.1:0", admin_token: %s}
shutdown_grace: 1s
replica:
  labels: %s
jobs:
  - name: batch
    schedule: "* * * * * *"
    on_replicas: {role: batch}
    shell: "true"
  - name: gpu
    schedule: "* * * * * *"
    on_replicas: {role: gpu}
    shell: "true"
  - name: local
    schedule: "* * * * * *"
    run_on: every_replica
    shell: "true"
  - name: stuck
    schedule: "* * * * * *"
    run_on: every_replica
    grace: 1s
    shell: sleep 30
`, url, owner, runtimeToken, labels))
}

// Where a job runs, with the built binary on three replicas (r1 and r3
// role: batch, r2 role: web): on_replicas runs a job only on the matching
// replicas and misses its ticks with reason no_replica when none matches;
// every_replica runs each tick once on each replica, status shows one
// entry per replica, suspend stops it on every replica and cancel stops
// the run of each; cronlock replicas shows the labels.
func TestRunOnAndOnReplicas(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	dir := t.TempDir()
	labels := map[string]string{"r1": "{role: batch, zone: eu-1}", "r2": "{role: web}", "r3": "{role: batch}"}
	var ds []*daemon
	for _, owner := range []string{"r1", "r2", "r3"} {
		ds = append(ds, startDaemon(t, dir, placementConfig(t, dir, url, owner, labels[owner])))
	}
	running(ds...)
	base := httpBase(t, ds[1])
	cfg := filepath.Join(dir, "r2.yaml")
	runs := func(job string) []statusRun {
		t.Helper()
		r := cronlock(t, nil, "status", "-c", cfg, "--json", "-n", "60", job)
		var all []struct{ Runs []statusRun }
		if err := json.Unmarshal([]byte(r.stdout), &all); err != nil || len(all) != 1 {
			t.Fatalf("status --json %s: %v\n%s%s", job, err, r.stdout, r.stderr)
		}
		return all[0].Runs
	}
	checkReplicasLabels(t, cfg)
	waitFor(t, 20*time.Second, "ticks of local that ran on each of the three replicas", func() bool {
		return len(ranEverywhere(runs("local"), 3)) >= 2
	})
	waitFor(t, 10*time.Second, "the three runs of stuck", func() bool {
		return len(withStatusOf(runs("stuck"), "running")) == 3
	})
	if r := cronlock(t, nil, "suspend", "-c", cfg, "stuck"); r.code != 0 {
		t.Fatalf("suspend stuck: exit %d\n%s", r.code, r.stderr)
	}
	r := cronlock(t, nil, "cancel", "-c", cfg, "stuck")
	if r.code != 0 || strings.Count(r.stdout, "ended cancelled") != 3 {
		t.Errorf("cancel stuck: exit %d, want the run of each replica cancelled:\n%s%s", r.code, r.stdout, r.stderr)
	}
	time.Sleep(1500 * time.Millisecond) // ticks pass: no replica may start the suspended job
	if n := len(withStatusOf(runs("stuck"), "running")); n != 0 {
		t.Errorf("stuck: %d runs started while the job is suspended", n)
	}
	checkOncePerReplica(t, runs("local"))
	checkPageOfLocal(t, base)
	for _, x := range runs("batch") {
		if x.Status == "succeeded" && x.Owner != "r1" && x.Owner != "r3" {
			t.Errorf("batch ran on %s: want only r1 and r3 (role: batch)", x.Owner)
		}
	}
	if n := len(withStatusOf(runs("batch"), "succeeded")); n < 2 {
		t.Errorf("batch ran %d times, want every second", n)
	}
	gpu := runs("gpu")
	if len(gpu) < 2 || len(withStatusOf(gpu, "missed")) != len(gpu) {
		t.Errorf("gpu: runs %+v, want only missed ticks", gpu)
	}
	for _, x := range gpu {
		if x.Reason != "no_replica" {
			t.Errorf("gpu: tick %v missed with reason %q, want no_replica", x.Tick, x.Reason)
		}
	}
	if text := cronlock(t, nil, "status", "-c", cfg, "local").stdout; !strings.Contains(text, " r1 ") || !strings.Contains(text, " r2 ") || !strings.Contains(text, " r3 ") {
		t.Errorf("status local does not list each replica's run:\n%s", text)
	}
}

// checkPageOfLocal checks the API of the page's job view of the
// every_replica job: its definition says so, and its runs have an entry
// for each replica; the API's cancel of an every_replica job that runs on
// no replica says so (409).
func checkPageOfLocal(t *testing.T, base string) {
	t.Helper()
	code, body, _ := request(t, "GET", base+"/api/jobs/local", "", "", nil)
	var d struct {
		Settings struct {
			RunOn string `json:"run_on"`
		} `json:"settings"`
		Runs []statusRun `json:"runs"`
	}
	if code != http.StatusOK || json.Unmarshal([]byte(body), &d) != nil {
		t.Fatalf("GET /api/jobs/local: %d %s", code, body)
	}
	if d.Settings.RunOn != "every_replica" || len(ranEverywhere(d.Runs, 3)) < 2 {
		t.Errorf("GET /api/jobs/local: %s; want run_on every_replica and an entry of each replica for its ticks", body)
	}
	// stuck: suspended, its runs on every replica cancelled.
	if code, body, _ := request(t, "POST", base+"/api/jobs/stuck/cancel", runtimeToken, "", nil); code != http.StatusConflict ||
		!strings.Contains(body, "not running on any replica") {
		t.Errorf("POST /api/jobs/stuck/cancel: %d %s, want 409: not running on any replica", code, body)
	}
}

// checkReplicasLabels checks cronlock replicas (text and --json) for the
// replicas' labels.
func checkReplicasLabels(t *testing.T, cfg string) {
	t.Helper()
	var reps []struct {
		ID     string            `json:"id"`
		Labels map[string]string `json:"labels"`
	}
	r := cronlock(t, nil, "replicas", "-c", cfg, "--json")
	if err := json.Unmarshal([]byte(r.stdout), &reps); err != nil || len(reps) != 3 {
		t.Fatalf("replicas --json: %v\n%s%s", err, r.stdout, r.stderr)
	}
	if reps[0].ID != "r1" || reps[0].Labels["zone"] != "eu-1" || reps[0].Labels["role"] != "batch" || reps[1].Labels["role"] != "web" {
		t.Errorf("replicas --json: %+v, want each replica's labels", reps)
	}
	if text := cronlock(t, nil, "replicas", "-c", cfg).stdout; !strings.Contains(text, "LABELS") || !strings.Contains(text, "role=batch,zone=eu-1") {
		t.Errorf("replicas does not show the labels:\n%s", text)
	}
}

// ranEverywhere returns the ticks among runs that succeeded on n replicas.
func ranEverywhere(runs []statusRun, n int) []time.Time {
	owners := map[time.Time][]string{}
	for _, r := range runs {
		if r.Status == "succeeded" {
			owners[r.Tick] = append(owners[r.Tick], r.Owner)
		}
	}
	var out []time.Time
	for tick, o := range owners {
		if len(o) >= n {
			out = append(out, tick)
		}
	}
	return out
}

// checkOncePerReplica checks that no tick ran twice on one replica.
func checkOncePerReplica(t *testing.T, runs []statusRun) {
	t.Helper()
	seen := map[string]bool{}
	for _, r := range runs {
		if r.Start.IsZero() {
			continue // missed or skipped: did not run
		}
		key := r.Tick.String() + " " + r.Owner
		if seen[key] {
			t.Errorf("tick %v ran twice on %s", r.Tick, r.Owner)
		}
		seen[key] = true
	}
	if owners := ownersOf(runs); !slices.Equal(owners, []string{"r1", "r2", "r3"}) {
		t.Errorf("owners %v, want r1, r2 and r3", owners)
	}
}

func ownersOf(runs []statusRun) []string {
	var out []string
	for _, r := range runs {
		if r.Owner != "" && !slices.Contains(out, r.Owner) {
			out = append(out, r.Owner)
		}
	}
	slices.Sort(out)
	return out
}

func withStatusOf(runs []statusRun, status string) []statusRun {
	var out []statusRun
	for _, r := range runs {
		if r.Status == status {
			out = append(out, r)
		}
	}
	return out
}
