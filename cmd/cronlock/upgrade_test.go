package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/scheduler"
)

// Stored formats are part of the product: a rolling update from the
// previous release must not run a tick twice. TestRollingUpdateFromPrevious
// checks it against the previous release's binary, which it does not build
// itself (building a second tree does not fit CI's time): it runs only when
// previousBinaryEnv names that binary.
const (
	previousBinaryEnv = "CRONLOCK_PREVIOUS_BINARY"
	// previousRelease is the commit before the last change of a stored
	// format (the jobs' locks moved into their records); the 0.1.0
	// release, 10c9fc0, passes too.
	previousRelease = "0a32453"
	previousBuild   = "git worktree add /tmp/cronlock-prev-src " + previousRelease +
		" && (cd /tmp/cronlock-prev-src && go build -o /tmp/cronlock-prev ./cmd/cronlock)"
)

// Versions of a replica in the rolling update.
const (
	relPrevious = "previous"
	relNew      = "new"
)

// previousStatuses and previousReasons are the statuses and reasons of
// history entries the previous release knows (its scheduler's constants).
var (
	previousStatuses = []scheduler.RunStatus{"running", "succeeded", "failed", "timeout", "lost", "cancelled", "missed", "abandoned", "interrupted", "skipped"}
	previousReasons  = []scheduler.Reason{"overlap", "no_replica", "outage", "suspended"}
)

// upgradeMixedFor is how long each step of the update runs with the fleet
// as it is.
const upgradeMixedFor = 3 * time.Second

// The jobs run every second and append "start JOB TICK TOKEN OWNER REL"
// when they start and "end JOB TICK TOKEN OWNER REL" when they end (REL:
// the replica's version). upgrade.slow runs 1.5 s, so every other tick comes
// while it runs and is missed for overlap.
const (
	upgradeLine  = `"$CRONLOCK_JOB $CRONLOCK_TICK $CRONLOCK_TOKEN $CRONLOCK_OWNER $REL" >> "$OUT"`
	upgradeQuick = `echo "start "` + upgradeLine + `; echo "end "` + upgradeLine
	upgradeSlow  = `echo "start "` + upgradeLine + `; sleep 1.5; echo "end "` + upgradeLine
)

func upgradeConfig(url, owner, out, rel string) string {
	return fmt.Sprintf(`
nats: {url: %s}
lock: {lease: 2s, renew: 500ms, owner: %s}
history: {size: 64}
http: {listen: ""}
log: {level: debug}
shutdown_grace: 3s
jobs:
  - name: upgrade.quick
    schedule: "* * * * * *"
    env: {OUT: %[3]q, REL: %[4]s}
    shell: %[5]q
  - name: upgrade.slow
    schedule: "* * * * * *"
    env: {OUT: %[3]q, REL: %[4]s}
    shell: %[6]q
`, url, owner, out, rel, upgradeQuick, upgradeSlow)
}

// upgradeFleet is three replicas, each of either version.
type upgradeFleet struct {
	t             *testing.T
	dir, url, out string
	bin           map[string]string  // version -> binary
	ds            map[string]*daemon // owner -> its process
	rel           map[string]string  // owner -> its version
	configs       map[string]string  // owner -> its config file
}

// start starts owner's replica of version rel and waits until it runs the
// scheduler.
func (f *upgradeFleet) start(owner, rel string) {
	f.t.Helper()
	f.configs[owner] = writeFile(f.t, f.dir, owner+"-"+rel+".yaml", upgradeConfig(f.url, owner, f.out, rel))
	f.ds[owner], f.rel[owner] = startDaemonOf(f.t, f.bin[rel], f.dir, f.configs[owner]), rel
	running(f.ds[owner])
	f.t.Logf("%s: %s release (pid %d)", owner, rel, f.ds[owner].cmd.Process.Pid)
}

// versions describes the fleet: "r1=new r2=previous r3=previous".
func (f *upgradeFleet) versions() string {
	var s []string
	for _, o := range []string{"r1", "r2", "r3"} {
		s = append(s, o+"="+f.rel[o])
	}
	return strings.Join(s, " ")
}

// upgradeRun is one run of a job as the job wrote it down.
type upgradeRun struct {
	job, owner, rel string
	tick            time.Time
	token           uint64
	ended           bool
	killedAt        time.Time // when its replica was SIGKILLed (killSlowRunner)
}

// upgradeRuns parses the runs file, in the order the runs started. A run
// started twice (same job, tick and token) is an error.
func upgradeRuns(t *testing.T, lines []string) []*upgradeRun {
	t.Helper()
	var runs []*upgradeRun
	byKey := map[string]*upgradeRun{}
	for i, l := range lines {
		f := strings.Fields(l)
		if len(f) != 6 || (f[0] != "start" && f[0] != "end") {
			t.Fatalf("runs line %d: unexpected %q", i+1, l)
		}
		key := strings.Join(f[1:4], " ")
		if f[0] == "end" {
			r := byKey[key]
			if r == nil || r.ended || r.owner != f[4] {
				t.Fatalf("runs line %d %q: no matching start", i+1, l)
			}
			r.ended = true
			continue
		}
		if byKey[key] != nil {
			t.Errorf("runs line %d: %s started twice", i+1, key)
			continue
		}
		tick, err := time.Parse(time.RFC3339, f[2])
		if err != nil {
			t.Fatalf("runs line %d %q: %v", i+1, l, err)
		}
		token, err := strconv.ParseUint(f[3], 10, 64)
		if err != nil {
			t.Fatalf("runs line %d %q: %v", i+1, l, err)
		}
		r := &upgradeRun{job: f[1], tick: tick, token: token, owner: f[4], rel: f[5]}
		byKey[key] = r
		runs = append(runs, r)
	}
	return runs
}

// freshSlowRun waits for a run of upgrade.slow to start that is not in
// seen, by a replica of version rel if one starts within a few runs (else
// any), and returns it. It adds the runs it passes over to seen.
func (f *upgradeFleet) freshSlowRun(rel string, seen map[string]bool) *upgradeRun {
	f.t.Helper()
	var fresh *upgradeRun
	deadline := time.Now().Add(8 * time.Second)
	waitFor(f.t, 20*time.Second, "a run of upgrade.slow to kill", func() bool {
		for _, r := range upgradeRuns(f.t, fileLines(f.t, f.out)) {
			key := fmt.Sprint(r.tick, r.token)
			if r.job != "upgrade.slow" || seen[key] {
				continue
			}
			seen[key] = true
			if !r.ended && f.ds[r.owner].alive() && (r.rel == rel || time.Now().After(deadline)) {
				fresh = r
			}
		}
		return fresh != nil
	})
	return fresh
}

// killSlowRunner SIGKILLs the replica running upgrade.slow mid-run (see
// freshSlowRun), waits until the history shows its run abandoned, and
// starts the replica again with the same version (a crashed replica comes
// back with its own release). It returns the killed run.
func (f *upgradeFleet) killSlowRunner(rel string) *upgradeRun {
	t := f.t
	t.Helper()
	seen := map[string]bool{}
	for _, r := range upgradeRuns(t, fileLines(t, f.out)) {
		seen[fmt.Sprint(r.tick, r.token)] = true
	}
	var victim *upgradeRun
	for victim == nil {
		victim = f.freshSlowRun(rel, seen)
		time.Sleep(300 * time.Millisecond) // mid-run: it runs 1.5 s
		f.ds[victim.owner].kill()
		victim.killedAt = time.Now()
		t.Logf("SIGKILLed %s (%s release) running upgrade.slow tick %s (token %d); fleet %s",
			victim.owner, victim.rel, victim.tick.Format(time.RFC3339), victim.token, f.versions())
		for _, r := range upgradeRuns(t, fileLines(t, f.out)) {
			if r.job == victim.job && r.tick.Equal(victim.tick) && r.ended {
				t.Logf("the run had ended before the kill (a slow machine); once more")
				f.start(victim.owner, victim.rel)
				victim = nil
				break
			}
		}
	}
	// Not a fatal wait: the checks of the runs and history at the end say
	// more of what went wrong.
	killed := time.Now()
	status := scheduler.RunStatus("")
	for time.Since(killed) < abandonedWithin && status != scheduler.StatusAbandoned {
		time.Sleep(100 * time.Millisecond)
		for _, r := range historyOf(t, f.url, "upgrade.slow") {
			if r.Tick.Equal(victim.tick) && r.Token == victim.token {
				status = r.Status
			}
		}
	}
	if status != scheduler.StatusAbandoned {
		t.Errorf("the killed run of tick %s is recorded %q %v after the kill, want abandoned",
			victim.tick.Format(time.RFC3339), status, abandonedWithin)
	} else {
		t.Logf("the killed run was recorded abandoned %v after the kill", time.Since(killed).Round(10*time.Millisecond))
	}
	f.start(victim.owner, victim.rel)
	return victim
}

// abandonedWithin bounds how long after its replica was killed a run is
// recorded abandoned: the lease (2 s), the killed replica's announcement
// lapsing (scheduler.ReplicaTTL) and a claim, with room for a slow machine.
const abandonedWithin = 2*time.Second + scheduler.ReplicaTTL + 7*time.Second

// readsAcross runs the commands that read what the other version wrote
// (announcements, locks) with both binaries, while the fleet runs.
func (f *upgradeFleet) readsAcross() {
	t := f.t
	t.Helper()
	cfg := f.configs["r1"]
	// "scheduler running" comes before the replica's first announcement,
	// so the listing is awaited (a few seconds at most), not read once.
	var ids []string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var reps []struct {
			ID string `json:"id"`
		}
		decode(t, "previous replicas --json", runBinaryOf(t, f.bin[relPrevious], "replicas", "-c", cfg, "--json"), &reps)
		ids = ids[:0]
		for _, r := range reps {
			ids = append(ids, r.ID)
		}
		slices.Sort(ids)
		if strings.Join(ids, ",") == "r1,r2,r3" {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("the previous release lists replicas %v with %s, want r1, r2, r3", ids, f.versions())
			break
		}
	}
	var locks []map[string]any
	decode(t, "previous locks --json", runBinaryOf(t, f.bin[relPrevious], "locks", "-c", cfg, "--json"), &locks)
	if r := cronlock(t, nil, "locks", "-c", cfg, "--json"); r.code != 0 {
		t.Errorf("new locks --json: exit %d: %s", r.code, r.stderr)
	}
	if r := cronlock(t, nil, "replicas", "-c", cfg, "--json"); r.code != 0 {
		t.Errorf("new replicas --json: exit %d: %s", r.code, r.stderr)
	}
}

// runBinaryOf runs bin with args and returns its stdout; a non-zero exit is
// a test error.
func runBinaryOf(t *testing.T, bin string, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Errorf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

func decode(t *testing.T, what, text string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(text), v); err != nil {
		t.Errorf("%s: %v in %q", what, err, text)
	}
}

// A rolling update from the previous release: three replicas of the
// previous binary are replaced one at a time by the new one, a few seconds
// of mixed versions at each step, and in the mixed phases the replica
// running the slow job is SIGKILLed mid-run (one of the previous release,
// then a new one, when they run it). No tick runs twice, tokens increase,
// every tick is accounted for exactly once in the shared history with a
// status and reason of either version, the killed runs end abandoned, and
// the previous binary reads all of it.
func TestRollingUpdateFromPrevious(t *testing.T) {
	prev := os.Getenv(previousBinaryEnv)
	if prev == "" {
		t.Skipf("set %s to the previous release's cronlock binary to run this test; build it with:\n  %s\nthen: %s=/tmp/cronlock-prev go test -race -count=1 -run TestRollingUpdateFromPrevious ./cmd/cronlock",
			previousBinaryEnv, previousBuild, previousBinaryEnv)
	}
	t.Parallel()
	f := &upgradeFleet{t: t, url: natstest.RunServer(t, natstest.Options{}).ClientURL(), dir: t.TempDir(),
		bin: map[string]string{relPrevious: prev, relNew: binary(t)},
		ds:  map[string]*daemon{}, rel: map[string]string{}, configs: map[string]string{}}
	f.out = filepath.Join(f.dir, "runs")
	began := time.Now()
	for _, owner := range []string{"r1", "r2", "r3"} {
		f.start(owner, relPrevious)
	}
	time.Sleep(upgradeMixedFor)
	var killed []*upgradeRun
	for i, owner := range []string{"r1", "r2", "r3"} {
		f.ds[owner].stop()
		f.start(owner, relNew)
		f.readsAcross()
		switch i {
		case 0: // r1 new, r2 and r3 previous
			killed = append(killed, f.killSlowRunner(relPrevious))
		case 1: // r1 and r2 new, r3 previous
			killed = append(killed, f.killSlowRunner(relNew))
		}
		time.Sleep(upgradeMixedFor)
	}
	for _, d := range f.ds {
		d.stop()
	}
	t.Logf("rolling update done in %v", time.Since(began).Round(100*time.Millisecond))

	runs := upgradeRuns(t, fileLines(t, f.out))
	checkUpgradeRuns(t, runs)
	for _, job := range []string{"upgrade.quick", "upgrade.slow"} {
		checkUpgradeHistory(t, job, historyOf(t, f.url, job), runs, killed)
	}
	checkUpgradeLosses(t, historyOf(t, f.url, "upgrade.quick"), killed)
	for _, k := range killed {
		logAfterKill(t, k, historyOf(t, f.url, k.job), runs)
	}
	checkPreviousReads(t, f)
	if t.Failed() {
		t.Logf("runs file:\n%s", strings.Join(fileLines(t, f.out), "\n"))
	}
}

// checkUpgradeRuns checks the runs file: per job, no tick ran twice and
// tokens increase with the ticks.
func checkUpgradeRuns(t *testing.T, runs []*upgradeRun) {
	t.Helper()
	byJob := map[string][]*upgradeRun{}
	perRel := map[string]int{}
	for _, r := range runs {
		byJob[r.job] = append(byJob[r.job], r)
		perRel[r.rel]++
	}
	for job, rs := range byJob {
		seen := map[time.Time]bool{}
		for i, r := range rs {
			if seen[r.tick] {
				t.Errorf("%s: tick %s ran twice (token %d on %s, %s release)", job, r.tick.Format(time.RFC3339), r.token, r.owner, r.rel)
				continue
			}
			seen[r.tick] = true
			if i > 0 && (!r.tick.After(rs[i-1].tick) || r.token <= rs[i-1].token) {
				t.Errorf("%s: tick %s (token %d, %s %s) ran after tick %s (token %d, %s %s)", job,
					r.tick.Format(time.RFC3339), r.token, r.owner, r.rel,
					rs[i-1].tick.Format(time.RFC3339), rs[i-1].token, rs[i-1].owner, rs[i-1].rel)
			}
		}
	}
	t.Logf("runs: %d (by release %v; quick %d, slow %d)", len(runs), perRel, len(byJob["upgrade.quick"]), len(byJob["upgrade.slow"]))
}

// checkUpgradeHistory checks a job's shared history against the runs
// file: every entry has a status and reason of either release; every
// tick from the oldest entry kept to the newest is covered by exactly one
// entry (a run, or a missed or skipped entry's span); an entry that ran
// matches the run in the file (token, owner; succeeded if it ended; the
// killed runs abandoned); no run in the file is missing from the history.
func checkUpgradeHistory(t *testing.T, job string, hist []scheduler.Run, runs []*upgradeRun, killed []*upgradeRun) {
	t.Helper()
	statuses := append(slices.Clone(previousStatuses), scheduler.StatusRunning, scheduler.StatusSucceeded,
		scheduler.StatusFailed, scheduler.StatusTimeout, scheduler.StatusLost, scheduler.StatusCancelled,
		scheduler.StatusMissed, scheduler.StatusAbandoned, scheduler.StatusInterrupted, scheduler.StatusSkipped)
	reasons := append(slices.Clone(previousReasons), scheduler.ReasonOverlap, scheduler.ReasonNoReplica,
		scheduler.ReasonOutage, scheduler.ReasonSuspended, scheduler.ReasonLockHeld)
	byTick := map[time.Time]*scheduler.Run{}
	missed := map[scheduler.Reason]int{}
	var oldest, newest time.Time
	for i := range hist {
		r := &hist[i]
		if !slices.Contains(statuses, r.Status) || (r.Reason != "" && !slices.Contains(reasons, r.Reason)) {
			t.Errorf("%s: entry %d has status %q reason %q, known to neither release", job, r.ID, r.Status, r.Reason)
		}
		if r.Manual {
			continue
		}
		n := max(r.Ticks, 1)
		if r.Status == scheduler.StatusMissed {
			missed[r.Reason] += n
		}
		for k := range n {
			at := r.Tick.Add(time.Duration(k) * time.Second)
			if o := byTick[at]; o != nil {
				t.Errorf("%s: tick %s is in entries %d (%s) and %d (%s)", job, at.Format(time.RFC3339), o.ID, o.Status, r.ID, r.Status)
			}
			byTick[at] = r
			if oldest.IsZero() || at.Before(oldest) {
				oldest = at
			}
			if at.After(newest) {
				newest = at
			}
		}
	}
	for at := oldest; !at.After(newest); at = at.Add(time.Second) {
		if byTick[at] == nil {
			t.Errorf("%s: tick %s has no entry in the history", job, at.Format(time.RFC3339))
		}
	}
	ran := 0
	for _, f := range runs {
		if f.job != job || f.tick.Before(oldest) {
			continue
		}
		ran++
		r := byTick[f.tick]
		isKilled := slices.ContainsFunc(killed, func(k *upgradeRun) bool { return k.job == job && k.tick.Equal(f.tick) && k.token == f.token })
		want := scheduler.StatusSucceeded
		if isKilled {
			want = scheduler.StatusAbandoned
		}
		switch {
		case r == nil:
			t.Errorf("%s: the run of tick %s (token %d on %s) is not in the history", job, f.tick.Format(time.RFC3339), f.token, f.owner)
		case r.Token != f.token || r.Owner != f.owner || r.Status != want || f.ended == isKilled:
			t.Errorf("%s: the run of tick %s (token %d on %s %s, ended %v) is recorded %+v, want %s", job,
				f.tick.Format(time.RFC3339), f.token, f.owner, f.rel, f.ended, *r, want)
		}
	}
	if ticks := len(byTick); ticks != ran+sum(missed) {
		t.Errorf("%s: %d ticks in the history, %d ran and %d missed", job, ticks, ran, sum(missed))
	}
	t.Logf("%s: %d ticks from %s to %s: %d ran, missed by reason %v", job, len(byTick),
		oldest.Format(time.TimeOnly), newest.Format(time.TimeOnly), ran, missed)
}

// logAfterKill says how the ticks after a killed run were recorded, and
// by which version: the missed entries up to the next run, whose claim
// marked the killed run abandoned (or left that to a later claim).
func logAfterKill(t *testing.T, k *upgradeRun, hist []scheduler.Run, runs []*upgradeRun) {
	t.Helper()
	var missed []string
	for i := len(hist) - 1; i >= 0; i-- { // oldest first
		r := hist[i]
		if !r.Tick.After(k.tick) {
			continue
		}
		if r.Status == scheduler.StatusMissed {
			missed = append(missed, fmt.Sprintf("%d %s", r.Ticks, r.Reason))
			continue
		}
		rel := "?"
		if j := slices.IndexFunc(runs, func(f *upgradeRun) bool { return f.job == k.job && f.tick.Equal(r.Tick) }); j >= 0 {
			rel = runs[j].rel
		}
		t.Logf("after %s (%s) was killed running tick %s: missed %v, then %s (%s) claimed tick %s",
			k.owner, k.rel, k.tick.Format(time.TimeOnly), missed, r.Owner, rel, r.Tick.Format(time.TimeOnly))
		return
	}
}

// checkUpgradeLosses bounds the ticks of upgrade.quick (which never
// overlaps) that no replica ran: at most one lease (2 s) and a tick per
// replica replaced, besides those of the kills (until the killed
// replica's announcement lapses and a lease more).
func checkUpgradeLosses(t *testing.T, hist []scheduler.Run, killed []*upgradeRun) {
	t.Helper()
	const lease, replaced = 2 * time.Second, 3
	afterKill := func(at time.Time) bool {
		for _, k := range killed {
			if !at.Before(k.killedAt.Add(-time.Second)) && at.Before(k.killedAt.Add(scheduler.ReplicaTTL+lease+2*time.Second)) {
				return true
			}
		}
		return false
	}
	lost := 0
	for _, r := range hist {
		if r.Status != scheduler.StatusMissed {
			continue
		}
		for k := range max(r.Ticks, 1) {
			if !afterKill(r.Tick.Add(time.Duration(k) * time.Second)) {
				lost++
			}
		}
	}
	if limit := replaced * int((lease+time.Second)/time.Second); lost > limit {
		t.Errorf("upgrade.quick: %d ticks lost outside the kills, want at most %d (a lease and a tick per replaced replica)", lost, limit)
	}
	t.Logf("upgrade.quick: %d ticks lost outside the kills", lost)
}

func sum[K comparable](m map[K]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// checkPreviousReads runs the previous release's status and locks against
// the history the fleet left (all replicas stopped): they exit 0, status
// --json prints what the new binary prints, and no lock is left held.
// addedStatusFields are the fields of status --json entries that this
// release adds: the JSON is only ever added to, so the histories compare
// without them.
var addedStatusFields = []string{"source"}

// withoutAdded is a status --json output without addedStatusFields,
// re-encoded so that two outputs compare as values.
func withoutAdded(t *testing.T, out string) string {
	t.Helper()
	var jobs []map[string]any
	decode(t, "status --json", out, &jobs)
	for _, j := range jobs {
		for _, f := range addedStatusFields {
			delete(j, f)
		}
	}
	b, err := json.Marshal(jobs)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func checkPreviousReads(t *testing.T, f *upgradeFleet) {
	t.Helper()
	cfg := f.configs["r1"]
	old := runBinaryOf(t, f.bin[relPrevious], "status", "-c", cfg, "--json", "-n", "0")
	var jobs []struct {
		Job  string            `json:"job"`
		Runs []json.RawMessage `json:"runs"`
	}
	decode(t, "previous status --json", old, &jobs)
	if len(jobs) != 2 || len(jobs[0].Runs) == 0 || len(jobs[1].Runs) == 0 {
		t.Errorf("previous status --json: %d jobs, want both with runs:\n%s", len(jobs), old)
	}
	if r := cronlock(t, nil, "status", "-c", cfg, "--json", "-n", "0"); r.code != 0 || withoutAdded(t, r.stdout) != withoutAdded(t, old) {
		t.Errorf("status --json: the new binary (exit %d) and the previous one print different histories:\nnew:\n%s\nprevious:\n%s", r.code, r.stdout, old)
	}
	runBinaryOf(t, f.bin[relPrevious], "status", "-c", cfg)
	var locks []map[string]any
	decode(t, "previous locks --json", runBinaryOf(t, f.bin[relPrevious], "locks", "-c", cfg, "--json"), &locks)
	if len(locks) != 0 {
		t.Errorf("locks left held after every replica stopped: %v", locks)
	}
}
