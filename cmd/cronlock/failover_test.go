package main

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
)

// failoverJob runs every second for about 3 s. It appends
// "start TICK TOKEN OWNER SHELL_PID SLEEP_PID UNIX_NS" when it starts and
// "end TICK TOKEN OWNER UNIX_NS" when it ends.
const failoverJob = `sleep 3 & echo "start $CRONLOCK_TICK $CRONLOCK_TOKEN $CRONLOCK_OWNER $$ $! $(date +%s%N)" >> "$OUT"; ` +
	`wait; echo "end $CRONLOCK_TICK $CRONLOCK_TOKEN $CRONLOCK_OWNER $(date +%s%N)" >> "$OUT"`

// jobRun is one run as the job wrote it down.
type jobRun struct {
	tick         time.Time
	token        uint64
	owner        string
	shPid, sleep int
	start, end   int64 // Unix ns; end 0 if the run never ended
	startLine    int
	endLine      int
}

// parseRuns reads the runs from the job's lines, in order of their start.
func parseRuns(t *testing.T, lines []string) []*jobRun {
	t.Helper()
	var runs []*jobRun
	byKey := map[string]*jobRun{}
	for i, l := range lines {
		f := strings.Fields(l)
		bad := func(err error) {
			t.Fatalf("line %d %q: %v", i+1, l, err)
		}
		switch {
		case len(f) == 7 && f[0] == "start":
			r := &jobRun{owner: f[3], startLine: i}
			var err error
			if r.tick, err = time.Parse(time.RFC3339, f[1]); err != nil {
				bad(err)
			}
			if r.token, err = strconv.ParseUint(f[2], 10, 64); err != nil {
				bad(err)
			}
			if r.shPid, err = strconv.Atoi(f[4]); err != nil {
				bad(err)
			}
			if r.sleep, err = strconv.Atoi(f[5]); err != nil {
				bad(err)
			}
			if r.start, err = strconv.ParseInt(f[6], 10, 64); err != nil {
				bad(err)
			}
			key := f[1] + " " + f[2]
			if byKey[key] != nil {
				t.Fatalf("line %d: run %s started twice", i+1, key)
			}
			byKey[key] = r
			runs = append(runs, r)
		case len(f) == 5 && f[0] == "end":
			r := byKey[f[1]+" "+f[2]]
			if r == nil || r.end != 0 || r.owner != f[3] {
				t.Fatalf("line %d %q: no matching start", i+1, l)
			}
			var err error
			if r.end, err = strconv.ParseInt(f[4], 10, 64); err != nil {
				bad(err)
			}
			r.endLine = i
		default:
			t.Fatalf("line %d: unexpected %q", i+1, l)
		}
	}
	return runs
}

// TestFailover runs three replicas as separate processes against one NATS
// server, SIGKILLs the one running the job mid-run, and checks that the
// job's process group died with it, that no two runs overlapped, that no
// tick ran twice and that another replica runs a later tick.
func TestFailover(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	dir := t.TempDir()
	out := filepath.Join(dir, "runs")
	replicas := map[string]*daemon{}
	for i := 1; i <= 3; i++ {
		owner := fmt.Sprintf("r%d", i)
		cfg := writeFile(t, dir, owner+".yaml", fmt.Sprintf(`
nats: {url: %s}
lock: {lease: 2s, renew: 500ms, owner: %s}
http: {listen: ""}
log: {level: debug}
shutdown_grace: 1s
jobs:
  - name: failover.job
    schedule: "* * * * * *"
    grace: 1s
    env: {OUT: %q}
    shell: %q
`, url, owner, out, failoverJob))
		replicas[owner] = startDaemon(t, dir, cfg)
	}

	// Let one run complete, then kill whoever runs the next one, mid-run.
	starts := func() []string {
		var s []string
		for _, l := range fileLines(t, out) {
			if strings.HasPrefix(l, "start ") {
				s = append(s, l)
			}
		}
		return s
	}
	waitFor(t, 60*time.Second, "a second run starts", func() bool { return len(starts()) >= 2 })
	victimLine := starts()[1]
	victim := parseRuns(t, []string{victimLine})[0]
	replicas[victim.owner].kill()
	t.Logf("SIGKILLed %s running tick %s (token %d), %v after the run started",
		victim.owner, victim.tick.Format(time.RFC3339), victim.token, time.Since(time.Unix(0, victim.start)))

	waitFor(t, 10*time.Second, "the killed replica's job processes die", func() bool {
		return gone(victim.shPid) && gone(victim.sleep)
	})
	deathSeen := time.Now()

	// Another replica runs a later tick, to the end.
	var later *jobRun
	waitFor(t, 30*time.Second, "another replica runs a later tick to the end", func() bool {
		for _, r := range parseRuns(t, fileLines(t, out)) {
			if r.tick.After(victim.tick) && r.owner != victim.owner && r.end != 0 {
				later = r
				return true
			}
		}
		return false
	})
	t.Logf("%s ran tick %s (token %d) %v after the kill",
		later.owner, later.tick.Format(time.RFC3339), later.token, time.Unix(0, later.start).Sub(deathSeen))

	runs := parseRuns(t, fileLines(t, out))
	ticks := map[time.Time]bool{}
	for i, r := range runs {
		if ticks[r.tick] {
			t.Errorf("tick %s ran twice", r.tick.Format(time.RFC3339))
		}
		ticks[r.tick] = true
		killed := r.tick.Equal(victim.tick) && r.token == victim.token
		switch {
		case killed && r.end != 0:
			t.Errorf("the killed run of tick %s wrote its end line", r.tick.Format(time.RFC3339))
		case !killed && r.end == 0 && i < len(runs)-1:
			t.Errorf("run of tick %s (token %d) never ended", r.tick.Format(time.RFC3339), r.token)
		}
		if i == 0 {
			continue
		}
		prev := runs[i-1]
		if r.token <= prev.token {
			t.Errorf("token %d of tick %s does not exceed the previous run's %d", r.token, r.tick.Format(time.RFC3339), prev.token)
		}
		if !r.tick.After(prev.tick) {
			t.Errorf("tick %s ran after tick %s", r.tick.Format(time.RFC3339), prev.tick.Format(time.RFC3339))
		}
		prevKilled := prev.tick.Equal(victim.tick) && prev.token == victim.token
		switch {
		case prevKilled && r.start <= deathSeen.UnixNano():
			t.Errorf("tick %s started before the killed run's processes were seen dead", r.tick.Format(time.RFC3339))
		case !prevKilled && (prev.end == 0 || prev.endLine > r.startLine || r.start < prev.end):
			t.Errorf("runs of ticks %s and %s overlap", prev.tick.Format(time.RFC3339), r.tick.Format(time.RFC3339))
		}
	}
	for owner, d := range replicas {
		if owner != victim.owner && !d.alive() {
			t.Errorf("replica %s exited", owner)
		}
	}
	if t.Failed() {
		t.Logf("runs file:\n%s", strings.Join(fileLines(t, out), "\n"))
	}
}
