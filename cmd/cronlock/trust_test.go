package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/scheduler"
)

// slowOnceShell is a job that is quick, except for the one run that takes
// the marker file $DIR/slow: that run writes its tick and owner to
// $DIR/slowtick and sleeps $SLOW seconds, with some output.
const slowOnceShell = `if mv "$DIR/slow" "$DIR/slow.taken" 2>/dev/null; then echo "$CRONLOCK_TICK $CRONLOCK_OWNER" > "$DIR/slowtick"; echo "slow run"; sleep "$SLOW"; echo "slow run done"; fi`

// trustConfig is a replica's config for these tests: notifications of
// events go to $DIR/notes.jsonl.
func trustConfig(t *testing.T, dir, url, owner, lease, schedule, events string, slow int) string {
	t.Helper()
	notes := filepath.Join(dir, "notes.jsonl")
	return writeFile(t, dir, owner+".yaml", fmt.Sprintf(`
nats: {url: %s}
lock: {lease: %s, renew: 500ms, owner: %s}
http: {listen: "127.0.0.1:0", admin_token: %s}
log: {level: debug}
shutdown_grace: 1s
notify:
  - command: ["sh", "-c", "cat >> %s; echo >> %s"]
    on: [%s]
jobs:
  - name: trust.job
    schedule: %q
    grace: 1s
    env: {DIR: %q, SLOW: "%d"}
    shell: %q
`, url, lease, owner, trustToken, notes, notes, events, schedule, dir, slow, slowOnceShell))
}

const trustToken = "trust-test-token-0123456789abcdef"

// slowRun waits for the slow run to start and returns its tick and owner.
func slowRun(t *testing.T, dir string) (time.Time, string) {
	t.Helper()
	var line string
	waitFor(t, 30*time.Second, "the slow run starts", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "slowtick"))
		line = strings.TrimSpace(string(b))
		return strings.Contains(line, " ")
	})
	tickText, owner, _ := strings.Cut(line, " ")
	tick, err := time.Parse(time.RFC3339, tickText)
	if err != nil {
		t.Fatalf("slowtick %q: %v", line, err)
	}
	return tick, owner
}

// notes returns the notifications the command target received.
func notes(t *testing.T, dir string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range fileLines(t, filepath.Join(dir, "notes.jsonl")) {
		if strings.TrimSpace(l) == "" {
			continue
		}
		var n map[string]any
		if err := json.Unmarshal([]byte(l), &n); err != nil {
			t.Fatalf("notification %q: %v", l, err)
		}
		out = append(out, n)
	}
	return out
}

// metricValue is the value of the sample name{labels} in a /metrics text
// (0 when absent).
func metricValue(t *testing.T, text, name string, labels map[string]string) float64 {
	t.Helper()
	total := 0.0
	for _, l := range strings.Split(text, "\n") {
		if !strings.HasPrefix(l, name+"{") && !strings.HasPrefix(l, name+" ") {
			continue
		}
		ok := true
		for k, v := range labels {
			ok = ok && strings.Contains(l, k+`="`+v+`"`)
		}
		if !ok {
			continue
		}
		f := strings.Fields(l)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", l, err)
		}
		total += v
	}
	return total
}

// A 7 s run on one replica while the NATS server is down for 12 s: the replica
// keeps the result and writes it once NATS answers. The history shows the
// run succeeded, never abandoned; no failure is notified; no replica's
// last-failure gauge moves.
func TestResultKeptThroughNATSOutage(t *testing.T) {
	t.Parallel()
	srv := natstest.RunRestartable(t, natstest.Options{})
	dir := t.TempDir()
	var ds []*daemon
	for _, owner := range []string{"r1", "r2", "r3"} {
		// The lease is shorter than the outage: once NATS is back, the
		// others may take the lock before the runner writes its result.
		ds = append(ds, startDaemon(t, dir, trustConfig(t, dir, srv.URL(), owner, "10s", "* * * * * *", "failure", 7)))
	}
	running(ds...)
	writeFile(t, dir, "slow", "")
	tick, owner := slowRun(t, dir)
	srv.Stop()
	time.Sleep(12 * time.Second) // the outage itself
	srv.Start()

	back := time.Now()
	var runs []scheduler.Run
	slowEnded := func() bool {
		for _, r := range runs {
			if r.Tick.Equal(tick) && !r.Manual && r.Status != scheduler.StatusRunning {
				return true
			}
		}
		return false
	}
	waitFor(t, 30*time.Second, "the slow run's result, and a later run's", func() bool {
		runs = historyOf(t, srv.URL(), "trust.job")
		return slowEnded() && len(runs) > 0 && runs[0].Tick.After(tick) && runs[0].Status == scheduler.StatusSucceeded
	})
	t.Logf("the slow run's result and a later run recorded %v after NATS was back", time.Since(back))
	var slow *scheduler.Run
	for i, r := range runs {
		if r.Status == scheduler.StatusAbandoned {
			t.Errorf("run %+v recorded abandoned", r)
		}
		if r.Tick.Equal(tick) && !r.Manual {
			slow = &runs[i]
		}
	}
	if slow == nil || slow.Status != scheduler.StatusSucceeded || slow.Owner != owner {
		t.Fatalf("the slow run (tick %v on %s): %+v; want succeeded", tick, owner, slow)
	}
	for _, n := range notes(t, dir) {
		t.Errorf("notification %v, want none (no run failed)", n)
	}
	for i, d := range ds {
		if v := metricValue(t, d.metrics(), "cronlock_last_failure_timestamp_seconds", map[string]string{"job": "trust.job"}); v != 0 {
			t.Errorf("replica r%d: cronlock_last_failure_timestamp_seconds = %v, want unset", i+1, v)
		}
	}
}

// Ticks of a */5 s job that come while a manual 7 s run holds its lock are
// missed for overlap: no notification, and no no_replica count.
func TestTicksDuringManualRunAreOverlap(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	dir := t.TempDir()
	var ds []*daemon
	for _, owner := range []string{"r1", "r2"} {
		ds = append(ds, startDaemon(t, dir, trustConfig(t, dir, url, owner, "2s", "*/5 * * * * *", "failure, missed, recovered", 7)))
	}
	running(ds...)
	waitFor(t, 20*time.Second, "a scheduled run", func() bool {
		runs := historyOf(t, url, "trust.job")
		return len(runs) > 0 && runs[0].Status == scheduler.StatusSucceeded
	})
	// Just after a tick: the next is at least 4 s away when the manual run
	// takes the marker.
	waitFor(t, 10*time.Second, "a second past a tick", func() bool {
		return time.Now().Second()%5 == 0 && time.Now().Nanosecond() < 500e6
	})
	writeFile(t, dir, "slow", "")
	triggerAPI(t, httpBase(t, ds[0]), "trust.job")
	manualTick, _ := slowRun(t, dir)

	waitFor(t, 30*time.Second, "a scheduled run after the manual one", func() bool {
		runs := historyOf(t, url, "trust.job")
		return len(runs) > 0 && !runs[0].Manual && runs[0].Tick.After(manualTick.Add(7*time.Second)) && runs[0].End.After(runs[0].Start)
	})
	overlaps := 0
	for _, r := range historyOf(t, url, "trust.job") {
		if r.Status != scheduler.StatusMissed {
			continue
		}
		if r.Reason != scheduler.ReasonOverlap {
			t.Errorf("missed entry %+v: reason %q, want %q", r, r.Reason, scheduler.ReasonOverlap)
		}
		overlaps += r.Ticks
	}
	if overlaps == 0 {
		t.Errorf("no tick during the manual run recorded missed (overlap)")
	}
	for _, n := range notes(t, dir) {
		t.Errorf("notification %v, want none", n)
	}
	for i, d := range ds {
		if v := metricValue(t, d.metrics(), "cronlock_ticks_missed_total", map[string]string{"job": "trust.job", "reason": string(scheduler.ReasonNoReplica)}); v != 0 {
			t.Errorf("replica r%d: cronlock_ticks_missed_total{reason=no_replica} = %v, want 0", i+1, v)
		}
	}
}

// triggerAPI starts a manual run with POST /api/jobs/NAME/trigger.
func triggerAPI(t *testing.T, base, name string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/api/jobs/"+name+"/trigger", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+trustToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("POST trigger: %s", resp.Status)
	}
}

// The replica running a job is SIGKILLed: its lock stays held until its
// lease ends, and the ticks missed meanwhile are recorded lock_held (not
// no_replica, with two replicas up), notified as missed with that reason;
// the killed run is marked abandoned once its replica's announcement is
// gone.
func TestKilledHolderTicksAreLockHeld(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	dir := t.TempDir()
	ds := map[string]*daemon{}
	for _, owner := range []string{"r1", "r2", "r3"} {
		ds[owner] = startDaemon(t, dir, trustConfig(t, dir, url, owner, "3s", "* * * * * *", "missed", 30))
	}
	for _, d := range ds {
		running(d)
	}
	writeFile(t, dir, "slow", "")
	tick, owner := slowRun(t, dir)
	ds[owner].kill()

	waitFor(t, 30*time.Second, "the killed run marked abandoned", func() bool {
		for _, r := range historyOf(t, url, "trust.job") {
			if r.Tick.Equal(tick) && r.Status == scheduler.StatusAbandoned {
				return true
			}
		}
		return false
	})
	held := 0
	for _, r := range historyOf(t, url, "trust.job") {
		if r.Status != scheduler.StatusMissed || !r.Tick.After(tick) {
			continue
		}
		if r.Reason != scheduler.ReasonLockHeld {
			t.Errorf("missed entry %+v: reason %q, want %q", r, r.Reason, scheduler.ReasonLockHeld)
		}
		held += r.Ticks
	}
	if held == 0 {
		t.Errorf("no tick missed while the killed replica's lock was held; want them lock_held")
	}
	lockHeld := 0.0
	for o, d := range ds {
		if o == owner {
			continue
		}
		m := d.metrics()
		lockHeld += metricValue(t, m, "cronlock_ticks_missed_total", map[string]string{"job": "trust.job", "reason": string(scheduler.ReasonLockHeld)})
		if v := metricValue(t, m, "cronlock_ticks_missed_total", map[string]string{"job": "trust.job", "reason": string(scheduler.ReasonNoReplica)}); v != 0 {
			t.Errorf("replica %s: cronlock_ticks_missed_total{reason=no_replica} = %v, want 0", o, v)
		}
	}
	if lockHeld != float64(held) {
		t.Errorf("cronlock_ticks_missed_total{reason=lock_held} = %v on the survivors, want %d", lockHeld, held)
	}
	waitFor(t, 10*time.Second, "the missed notification", func() bool { return len(notes(t, dir)) > 0 })
	for _, n := range notes(t, dir) {
		if n["event"] != "missed" || n["reason"] != string(scheduler.ReasonLockHeld) {
			t.Errorf("notification %v: want missed, reason lock_held", n)
		}
	}
}
