package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
)

// deploymentConfig is a replica of deployment dep: the jobs report and
// spread.j0..j3, every two seconds (a run slowed by a loaded machine must
// not outlive its interval and skip a tick), each appending "dep job owner
// tick" to out.
func deploymentConfig(url, dep, owner, out string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "deployment: %s\nnats: {url: %s}\nlock: {lease: 2s, renew: 500ms, owner: %s}\nhttp: {listen: \"\"}\nshutdown_grace: 2s\njobs:\n",
		dep, url, owner)
	for _, name := range []string{"report", "spread.j0", "spread.j1", "spread.j2", "spread.j3"} {
		fmt.Fprintf(&b, "  - name: %s\n    schedule: \"*/2 * * * * *\"\n    env: {OUT: %q}\n", name, out)
		fmt.Fprintf(&b, "    shell: 'echo \"%s $CRONLOCK_JOB $CRONLOCK_OWNER $CRONLOCK_TICK\" >> \"$OUT\"'\n", dep)
	}
	return b.String()
}

// depRuns maps "job tick" to the owners that ran it, from the lines of out
// written by deployment dep (any other line fails the test).
func depRuns(t *testing.T, out, dep string) map[string][]string {
	t.Helper()
	runs := map[string][]string{}
	for _, l := range fileLines(t, out) {
		f := strings.Fields(l)
		if len(f) != 4 || f[0] != dep {
			t.Fatalf("%s: line %q, want one of deployment %s's runs", out, l, dep)
		}
		runs[f[1]+" "+f[3]] = append(runs[f[1]+" "+f[3]], f[2])
	}
	return runs
}

// Two deployments on one NATS account, both defining report (and four
// more jobs) with their own commands: each deployment runs every tick of
// its own jobs, once, on its own replicas; `cronlock replicas` of each
// lists only its replicas.
func TestDeploymentsShareNATS(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	dir := t.TempDir()
	outs := map[string]string{"a": filepath.Join(dir, "a.runs"), "b": filepath.Join(dir, "b.runs")}
	owners := map[string][]string{"a": {"a1", "a2"}, "b": {"b1"}}
	cfgs := map[string]string{}
	var ds []*daemon
	for _, dep := range []string{"a", "b"} {
		for _, owner := range owners[dep] {
			cfgs[dep] = writeFile(t, dir, owner+".yaml", deploymentConfig(url, dep, owner, outs[dep]))
			ds = append(ds, startDaemon(t, dir, cfgs[dep]))
		}
	}
	running(ds...)
	defer stopAll(ds)

	// Ticks from two seconds on, when every replica announced itself.
	from := time.Now().Add(3 * time.Second).Truncate(2 * time.Second)
	ticks := []string{}
	for i := range 2 {
		ticks = append(ticks, from.Add(time.Duration(2*i)*time.Second).UTC().Format(time.RFC3339))
	}
	last := "report " + ticks[len(ticks)-1]
	waitFor(t, 30*time.Second, "both deployments' report at "+ticks[len(ticks)-1], func() bool {
		return len(depRuns(t, outs["a"], "a")[last]) > 0 && len(depRuns(t, outs["b"], "b")[last]) > 0
	})
	time.Sleep(500 * time.Millisecond) // the other jobs of the last tick, and any duplicate
	for _, dep := range []string{"a", "b"} {
		runs := depRuns(t, outs[dep], dep)
		for _, tick := range ticks {
			for _, name := range []string{"report", "spread.j0", "spread.j1", "spread.j2", "spread.j3"} {
				got := runs[name+" "+tick]
				if len(got) != 1 || !slices.Contains(owners[dep], got[0]) {
					t.Errorf("deployment %s: %s at %s ran on %v, want once on one of %v", dep, name, tick, got, owners[dep])
				}
			}
		}

		var reps []struct {
			ID string `json:"id"`
		}
		r := cronlock(t, nil, "replicas", "-c", cfgs[dep], "--json")
		if err := json.Unmarshal([]byte(r.stdout), &reps); r.code != 0 || err != nil {
			t.Fatalf("replicas -c %s: exit %d, %v\n%s%s", cfgs[dep], r.code, err, r.stdout, r.stderr)
		}
		var ids []string
		for _, rep := range reps {
			ids = append(ids, rep.ID)
		}
		if !slices.Equal(ids, owners[dep]) {
			t.Errorf("replicas of deployment %s: %v, want %v", dep, ids, owners[dep])
		}
	}
}

// stopAll stops the daemons at once (each one's stop waits for its
// shutdown).
func stopAll(ds []*daemon) {
	var wg sync.WaitGroup
	for _, d := range ds {
		wg.Go(d.stop)
	}
	wg.Wait()
}

// Two replicas on the same buckets whose report runs different commands
// (two deployments without deployment names): the replicas see the other
// definition's claims, log it at warn and count it, and `status` says the
// runs shown may be the other definition's.
func TestDefinitionConflictShown(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	dir := t.TempDir()
	var ds []*daemon
	var cfgs []string
	for _, owner := range []string{"c1", "c2"} {
		cfg := writeFile(t, dir, owner+".yaml", fmt.Sprintf(`
nats: {url: %s}
lock: {lease: 2s, renew: 500ms, owner: %s}
http: {listen: "127.0.0.1:0"}
shutdown_grace: 2s
jobs:
  - name: report
    schedule: "* * * * * *"
    shell: echo %s
`, url, owner, owner))
		cfgs = append(cfgs, cfg)
		ds = append(ds, startDaemon(t, dir, cfg))
	}
	defer stopAll(ds)
	counted := func() float64 {
		sum := 0.0
		for _, d := range ds {
			_, body := fetch(httpBase(t, d) + "/metrics")
			sum += metricValue(t, body, "cronlock_job_definition_conflicts_total", map[string]string{"job": "report"})
		}
		return sum
	}
	waitFor(t, 20*time.Second, "a definition conflict counted", func() bool { return counted() > 0 })
	warned := false
	for _, d := range ds {
		for _, l := range strings.Split(d.out.String(), "\n") {
			if strings.Contains(l, "another definition of this job writes") {
				warned = warned || strings.Contains(l, `"level":"warn"`) && strings.Contains(l, `"job":"report"`)
			}
		}
	}
	if !warned {
		t.Error("no warn line for the definition conflict")
	}
	// Both claim the ticks; the one whose last claim is the other's says so.
	waitFor(t, 10*time.Second, "status of a replica naming the other definition", func() bool {
		for _, cfg := range cfgs {
			r := cronlock(t, nil, "status", "-c", cfg, "report")
			if r.code == 0 && strings.Contains(r.stdout, "report: its last tick was claimed by another definition of the job") {
				return true
			}
		}
		return false
	})
}
