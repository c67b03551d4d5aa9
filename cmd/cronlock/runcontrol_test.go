package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
)

// runControlConfig is a replica with three jobs that outlive their
// interval or fail: "queued" (overlap queue, 2.3 s of a 1 s schedule),
// "replaced" (overlap replace, 30 s of a 2 s schedule) and "flaky"
// (fails every second, suspended after 2 failures in a row, notifying
// into notes).
func runControlConfig(t *testing.T, dir, url, owner, notes string) string {
	t.Helper()
	return writeFile(t, dir, owner+".yaml", fmt.Sprintf(`
nats: {url: %s}
lock: {lease: 2s, renew: 500ms, owner: %s}
http: {listen: ""}
shutdown_grace: 1s
groups:
  backups: {max_running: 2}
jobs:%s
  - name: queued
    schedule: "* * * * * *"
    overlap: queue
    shell: sleep 2.3
  - name: replaced
    schedule: "*/2 * * * * *"
    overlap: replace
    grace: 1s
    shell: sleep 30
  - name: parallel
    schedule: "* * * * * *"
    overlap: allow
    max_parallel: 2
    shell: sleep 2.5
  - name: flaky
    schedule: "* * * * * *"
    suspend_after_failures: 2
    shell: exit 3
    notify:
      - command: ["sh", "-c", "cat >> %s; echo >> %s"]
        on: [suspended, failure]
`, url, owner, groupJobs(), notes, notes))
}

// groupJobs are five jobs of the group backups (max_running 2), due at
// once every 10 s, each running 0.7 s, waiting up to 8 s for a slot.
func groupJobs() string {
	var b strings.Builder
	for i := range 5 {
		fmt.Fprintf(&b, `
  - name: backup.%d
    schedule: "*/10 * * * * *"
    group: backups
    starting_deadline: 8s
    shell: sleep 0.7`, i)
	}
	return b.String()
}

// statusRun is a run of `status --json` as these tests read it.
type statusRun struct {
	Tick   time.Time `json:"tick"`
	Owner  string    `json:"owner"`
	Start  time.Time `json:"start"`
	End    time.Time `json:"end"`
	Status string    `json:"status"`
	Reason string    `json:"reason"`
	By     string    `json:"by"`
}

// The overlap policies and suspend_after_failures with the built binary
// on three replicas. queue: when a run ends, the latest tick that came
// during it starts at once, runs never overlap, each tick runs once.
// replace: each tick stops the run in progress (recorded cancelled,
// reason replaced, by its replica) and starts once it is gone. A job
// failing every tick is suspended after its second failure for every
// replica, with one "suspended" notification.
func TestOverlapPoliciesAndSuspendAfterFailures(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes.jsonl")
	var ds []*daemon
	for _, owner := range []string{"r1", "r2", "r3"} {
		ds = append(ds, startDaemon(t, dir, runControlConfig(t, dir, url, owner, notes)))
	}
	running(ds...)
	cfg := filepath.Join(dir, "r1.yaml")
	runs := func(job string) []statusRun {
		t.Helper()
		r := cronlock(t, nil, "status", "-c", cfg, "--json", "-n", "20", job)
		var all []struct{ Runs []statusRun }
		if err := json.Unmarshal([]byte(r.stdout), &all); err != nil || len(all) != 1 {
			t.Fatalf("status --json %s: %v\n%s%s", job, err, r.stdout, r.stderr)
		}
		out := all[0].Runs
		slices.Reverse(out) // oldest first
		return out
	}
	finished := func(job string) []statusRun { return finishedOf(runs(job)) }
	waitFor(t, 40*time.Second, "three finished runs of queued and replaced", func() bool {
		return len(finished("queued")) >= 3 && len(finished("replaced")) >= 3
	})
	checkPolicy(t, "queued", finished("queued"), func(prev, r statusRun) {
		if latest := prev.End.Truncate(time.Second); !r.Tick.Equal(latest) {
			t.Errorf("queued: after the run of %v ended at %v, tick %v ran; want the latest before the end", prev.Tick, prev.End, r.Tick)
		}
	})
	checkPolicy(t, "replaced", finished("replaced"), func(prev, r statusRun) {
		if prev.Status != "cancelled" || prev.Reason != "replaced" || prev.By != prev.Owner {
			t.Errorf("replaced: the run of %v before tick %v was recorded %s (%s) by %q, want cancelled (replaced) by %s",
				prev.Tick, r.Tick, prev.Status, prev.Reason, prev.By, prev.Owner)
		}
	})

	checkGroup(t, func(job string) []statusRun { return finishedOf(runs(job)) })
	checkParallel(t, finished("parallel"))

	waitFor(t, 10*time.Second, "the suspended notification", func() bool { return strings.Contains(readOrEmpty(notes), `"event":"suspended"`) })
	time.Sleep(1500 * time.Millisecond) // ticks pass: no replica may run the suspended job
	var failed int
	for _, r := range runs("flaky") {
		if r.Status == "failed" {
			failed++
		}
	}
	if failed != 2 {
		t.Errorf("flaky: %d failed runs, want 2 before the suspension stopped it", failed)
	}
	if n := strings.Count(readOrEmpty(notes), `"event":"suspended"`); n != 1 {
		t.Errorf("%d suspended notifications, want 1:\n%s", n, readOrEmpty(notes))
	}
	if r := cronlock(t, nil, "status", "-c", cfg, "flaky"); !strings.Contains(r.stdout, "suspended after 2 consecutive failures") {
		t.Errorf("status of flaky does not give the suspension's note:\n%s", r.stdout)
	}
}

// finishedOf are the runs that started and ended.
func finishedOf(runs []statusRun) []statusRun {
	var out []statusRun
	for _, r := range runs {
		if !r.Start.IsZero() && !r.End.IsZero() {
			out = append(out, r)
		}
	}
	return out
}

// checkGroup waits until each of the five jobs of the group backups has
// run, and checks that never more than two of their runs overlapped.
func checkGroup(t *testing.T, finished func(job string) []statusRun) {
	t.Helper()
	var all []statusRun
	waitFor(t, 30*time.Second, "a run of each of the group's five jobs", func() bool {
		all = nil
		for i := range 5 {
			rs := finished(fmt.Sprintf("backup.%d", i))
			if len(rs) == 0 {
				return false
			}
			all = append(all, rs...)
		}
		return true
	})
	for _, r := range all {
		at := 0
		for _, o := range all {
			if !o.Start.After(r.Start) && o.End.After(r.Start) {
				at++ // o runs at r's start (r itself included)
			}
		}
		if at > 2 {
			t.Errorf("%d runs of the group at once at %v, want at most 2", at, r.Start)
		}
	}
}

// checkParallel checks the runs of the allow job (max_parallel 2): each
// tick once, never more than two at once, and two at once at some point.
func checkParallel(t *testing.T, runs []statusRun) {
	t.Helper()
	ticks, most := map[time.Time]bool{}, 0
	for _, r := range runs {
		if ticks[r.Tick] {
			t.Errorf("parallel: tick %v ran twice", r.Tick)
		}
		ticks[r.Tick] = true
		at := 0
		for _, o := range runs {
			if !o.Start.After(r.Start) && o.End.After(r.Start) {
				at++
			}
		}
		most = max(most, at)
	}
	if most != 2 {
		t.Errorf("parallel: at most %d runs at once, want 2 (max_parallel) among %d runs", most, len(runs))
	}
}

// checkPolicy checks runs (oldest first) of a job for exactly-once and no
// overlap, and that each run starts at once after the one before it ended
// (a queued or replacing tick), then check of each pair.
func checkPolicy(t *testing.T, job string, runs []statusRun, check func(prev, r statusRun)) {
	t.Helper()
	ticks := map[time.Time]bool{}
	for i, r := range runs {
		if ticks[r.Tick] {
			t.Errorf("%s: tick %v ran twice", job, r.Tick)
		}
		ticks[r.Tick] = true
		if i == 0 {
			continue
		}
		prev := runs[i-1]
		if r.Start.Before(prev.End) {
			t.Errorf("%s: the run of %v started at %v, before the run of %v ended at %v", job, r.Tick, r.Start, prev.Tick, prev.End)
		}
		if gap := r.Start.Sub(prev.End); gap > 700*time.Millisecond {
			t.Errorf("%s: the run of %v started %v after the one before it ended, want at once", job, r.Tick, gap)
		}
		check(prev, r)
	}
}

// readOrEmpty is the file's content, "" when it does not exist yet.
func readOrEmpty(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}
