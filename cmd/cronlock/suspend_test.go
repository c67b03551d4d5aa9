package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/scheduler"
)

// UnmarshalJSON reads an exit_code back, for the tests: null or a number.
func (e *exitCode) UnmarshalJSON(b []byte) error {
	e.ended = true
	if string(b) == "null" {
		e.code = nil
		return nil
	}
	var n int
	if err := json.Unmarshal(b, &n); err != nil {
		return err
	}
	e.code = &n
	return nil
}

// opsEnv is a NATS server, a configuration on it and helpers running the
// operator commands in-process.
type opsEnv struct {
	t   *testing.T
	dir string
	cfg string // configuration file
	url string
}

func newOpsEnv(t *testing.T, jobs string) *opsEnv {
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	dir := t.TempDir()
	cfg := writeFile(t, dir, "cronlock.yaml", fmt.Sprintf(`
nats: {url: %s}
lock: {lease: 4s, renew: 1s}
http: {listen: ""}
log: {level: info}
shutdown_grace: 2s
jobs:
%s`, url, jobs))
	return &opsEnv{t: t, dir: dir, cfg: cfg, url: url}
}

// run runs cronlock ARGS -c CFG (args[0] is the command) and checks the
// exit code.
func (e *opsEnv) run(code int, args ...string) result {
	e.t.Helper()
	args = append([]string{args[0], "-c", e.cfg}, args[1:]...)
	r := cronlock(e.t, nil, args...)
	if r.code != code {
		e.t.Fatalf("cronlock %q: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, r.code, code, r.stdout, r.stderr)
	}
	return r
}

// status is `status --json` for job, decoded loosely so that the test sees
// which keys are there.
func (e *opsEnv) status(job string) map[string]any {
	e.t.Helper()
	r := e.run(0, "status", "--json")
	var all []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &all); err != nil {
		e.t.Fatalf("status --json: %v\n%s", err, r.stdout)
	}
	for _, s := range all {
		if s["job"] == job {
			return s
		}
	}
	e.t.Fatalf("status --json lacks job %q:\n%s", job, r.stdout)
	return nil
}

// runsOf returns the runs of a status --json job, newest first.
func runsOf(t *testing.T, s map[string]any) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, r := range s["runs"].([]any) {
		out = append(out, r.(map[string]any))
	}
	return out
}

// TestSuspendResume suspends an every-second job while `cronlock run`
// runs it: within a second no run starts, status shows the suspension, and
// resume brings the runs back.
func TestSuspendResume(t *testing.T) {
	t.Parallel()
	e := newOpsEnv(t, "")
	out := filepath.Join(e.dir, "tick.out")
	e.cfg = writeFile(t, e.dir, "cronlock.yaml", mustRead(t, e.cfg)+fmt.Sprintf(`
  - name: tick
    schedule: "* * * * * *"
    shell: date +%%s%%N >> %q
  - name: other
    schedule: "@yearly"
    shell: "true"
  - name: held
    schedule: "@yearly"
    shell: "true"
    suspended: true
`, out))
	d := startDaemon(t, e.dir, e.cfg)
	runs := func() int { return len(fileLines(t, out)) }
	waitFor(t, 30*time.Second, "two runs of tick", func() bool { return runs() >= 2 })

	if r := e.run(2, "suspend", "no.such.job"); !strings.Contains(r.stderr, "no such job") {
		t.Errorf("suspend of an unknown job: stderr %q", r.stderr)
	}
	if r := e.run(0, "suspend", "tick"); !strings.Contains(r.stdout, `suspended "tick"`) {
		t.Errorf("suspend: stdout %q", r.stdout)
	}
	suspendedAt := time.Now()
	e.run(0, "suspend", "tick") // again: no change, no error

	s := e.status("tick")
	if s["suspended"] != true || !strings.HasSuffix(fmt.Sprint(s["suspended_by"]), "(cronlock suspend)") {
		t.Errorf("status --json after suspend: suspended %v by %v, want true by <user>@<host> (cronlock suspend)",
			s["suspended"], s["suspended_by"])
	}
	if o := e.status("other"); o["suspended"] != false {
		t.Errorf("status --json: other.suspended = %v, want false", o["suspended"])
	}
	if h := e.status("held"); h["suspended"] != true {
		t.Errorf("status --json: held (suspended: true in the configuration).suspended = %v, want true", h["suspended"])
	}
	text := e.run(0, "status").stdout
	if !strings.Contains(text, "tick (suspended)") || !strings.Contains(text, "tick is suspended since") ||
		!strings.Contains(text, "held is suspended by its configuration") || strings.Contains(text, "other (suspended)") {
		t.Errorf("status after suspend does not mark tick and held (only) suspended:\n%s", text)
	}
	if r := e.run(0, "next", "-n", "1"); !regexp.MustCompile(`(?m)^tick +\S+ +\(suspended\)$`).MatchString(r.stdout) ||
		!regexp.MustCompile(`(?m)^held +\S+ +\(suspended\)$`).MatchString(r.stdout) || strings.Count(r.stdout, "(suspended)") != 2 {
		t.Errorf("next after suspend does not mark tick and held (only) suspended:\n%s", r.stdout)
	}
	if r := e.run(0, "next", "-n", "1", "tick"); !strings.Contains(r.stderr, "tick is suspended") ||
		strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("next tick after suspend: stdout %q, stderr %q; want one time and a note on stderr", r.stdout, r.stderr)
	}

	// Every replica stops starting the job's ticks within 1 s.
	time.Sleep(time.Until(suspendedAt.Add(time.Second)))
	before := runs()
	time.Sleep(3 * time.Second) // the absence of runs over 3 s is what is tested
	if after := runs(); after != before {
		t.Fatalf("tick ran %d times in the 3 s after suspend+1s", after-before)
	}
	// The ticks it did not start are recorded as skipped, with the reason.
	if r := runsOf(t, e.status("tick"))[0]; r["status"] != string(scheduler.StatusSkipped) ||
		r["reason"] != string(scheduler.ReasonSuspended) || r["ticks"].(float64) < 3 {
		t.Errorf("status --json: tick's newest entry while suspended = %v, want skipped, reason suspended, ticks >= 3", r)
	} else if code, ok := r["exit_code"]; !ok || code != nil {
		t.Errorf("status --json: a skipped entry (no process) has exit_code %v (present: %v), want null", code, ok)
	}
	if text := e.run(0, "status").stdout; !strings.Contains(text, "skipped (suspended, ") {
		t.Errorf("status while suspended does not show the skipped ticks with their reason:\n%s", text)
	}

	if r := e.run(0, "resume", "tick"); !strings.Contains(r.stdout, `resumed "tick"`) {
		t.Errorf("resume: stdout %q", r.stdout)
	}
	waitFor(t, 20*time.Second, "two runs of tick after resume", func() bool { return runs() >= before+2 })
	if s := e.status("tick"); s["suspended"] != false {
		t.Errorf("status --json after resume: suspended = %v", s["suspended"])
	}
	if text := e.run(0, "status").stdout; strings.Contains(text, "tick (suspended)") {
		t.Errorf("status after resume still shows tick suspended:\n%s", text)
	}
	if r := e.run(0, "next", "-n", "1"); strings.Count(r.stdout, "(suspended)") != 1 || r.stderr != "" {
		t.Errorf("next after resume: stdout %q, stderr %q; want only held suspended", r.stdout, r.stderr)
	}
	// resume lifts the shared state only: the configuration still suspends held.
	if r := e.run(0, "resume", "held"); !strings.Contains(r.stdout, "stays suspended") {
		t.Errorf("resume of a job the configuration suspends: stdout %q, want it to say it stays suspended", r.stdout)
	}
	if h := e.status("held"); h["suspended"] != true {
		t.Errorf("status --json after resume held: suspended = %v, want true (the configuration says so)", h["suspended"])
	}
	d.stop()
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReplicasAndRunningStatus lists a running daemon with `replicas`
// while it runs a long job, checks that status --json leaves out what the
// running run does not have yet, and that the replica disappears when the
// daemon stops.
func TestReplicasAndRunningStatus(t *testing.T) {
	t.Parallel()
	e := newOpsEnv(t, `
  - name: slow
    schedule: "* * * * * *"
    shell: sleep 120
`)
	if r := e.run(0, "replicas", "--json"); r.stdout != "[]\n" {
		t.Errorf("replicas --json with no daemon = %q, want []", r.stdout)
	}
	if r := e.run(0, "replicas"); !strings.Contains(r.stdout, "no replica is running") {
		t.Errorf("replicas with no daemon = %q", r.stdout)
	}
	d := startDaemon(t, e.dir, e.cfg)
	pid := d.cmd.Process.Pid
	host, _ := os.Hostname()
	var reps []replicaJSON
	waitFor(t, 30*time.Second, "replicas --json to list the daemon running slow", func() bool {
		r := e.run(0, "replicas", "--json")
		reps = nil
		if err := json.Unmarshal([]byte(r.stdout), &reps); err != nil {
			t.Fatalf("replicas --json: %v\n%s", err, r.stdout)
		}
		return len(reps) == 1 && slices.Contains(reps[0].Running, "slow")
	})
	if r := reps[0]; r.PID != pid || r.Host != host || r.ID == "" || r.Version == "" || r.Started.IsZero() ||
		r.Seen.Before(r.Started) {
		t.Errorf("replicas --json = %+v, want pid %d on host %q", r, pid, host)
	}
	text := e.run(0, "replicas").stdout
	for _, want := range []string{"HOST", fmt.Sprint(pid), host, "slow", reps[0].ID} {
		if !strings.Contains(text, want) {
			t.Errorf("replicas lacks %q:\n%s", want, text)
		}
	}

	runs := runsOf(t, e.status("slow"))
	if len(runs) == 0 || runs[0]["status"] != string(scheduler.StatusRunning) {
		t.Fatalf("status --json: slow's newest run is not running: %v", runs)
	}
	for _, key := range []string{"end", "duration_seconds", "attempts", "exit_code", "output", "error"} {
		if v, ok := runs[0][key]; ok {
			t.Errorf("status --json: the running run has %q: %v", key, v)
		}
	}
	for _, key := range []string{"tick", "start", "owner", "token"} {
		if _, ok := runs[0][key]; !ok {
			t.Errorf("status --json: the running run lacks %q", key)
		}
	}

	d.stop()
	waitFor(t, 15*time.Second, "the stopped daemon to leave replicas", func() bool {
		return e.run(0, "replicas", "--json").stdout == "[]\n"
	})
}

// TestStatusShowsOutput triggers a job that prints "boom" and exits 3, and
// one that succeeds, and checks status: the failed run's output and exit
// code, the successful run's output only with -v.
func TestStatusShowsOutput(t *testing.T) {
	t.Parallel()
	e := newOpsEnv(t, `
  - name: boom
    schedule: "@yearly"
    shell: echo boom; printf '\033[2Jcleared\n'; exit 3
  - name: fine
    schedule: "@yearly"
    shell: echo all is well
`)
	e.run(1, "trigger", "--local", "boom")
	e.run(0, "trigger", "--local", "fine")

	runs := runsOf(t, e.status("boom"))
	if len(runs) != 1 {
		t.Fatalf("status --json: boom has %d runs, want 1", len(runs))
	}
	if r := runs[0]; r["status"] != string(scheduler.StatusFailed) || r["exit_code"] != 3.0 || r["output"] != "boom\n\033[2Jcleared\n" {
		t.Errorf("status --json: boom's run = %v, want failed, exit_code 3, its output", r)
	}
	if r := runsOf(t, e.status("fine"))[0]; r["exit_code"] != 0.0 || r["output"] != "all is well\n" {
		t.Errorf("status --json: fine's run = %v, want exit_code 0 and its output", r)
	}

	text := e.run(0, "status").stdout
	if !strings.Contains(text, "\n"+outputIndent+"boom\n"+outputIndent+"\uFFFD[2Jcleared\n") || strings.Contains(text, "all is well") {
		t.Errorf("status: want boom's output, its escape sequence made inert, under its run and not fine's:\n%q", text)
	}
	text = e.run(0, "status", "-v").stdout
	if !strings.Contains(text, "\n"+outputIndent+"boom\n") || !strings.Contains(text, "\n"+outputIndent+"all is well\n") {
		t.Errorf("status -v: want every run's output:\n%s", text)
	}
}

// TestNextWithoutNATS: next prints the run times when the NATS it would
// read suspensions from does not answer, and warns.
func TestNextWithoutNATS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := writeFile(t, dir, "cronlock.yaml", fmt.Sprintf(`
nats: {url: "nats://127.0.0.1:%d"}
jobs:
  - name: daily
    schedule: "@daily"
    shell: "true"
`, reservePort(t)))
	start := time.Now()
	r := cronlock(t, nil, "next", "-c", cfg, "-n", "2", "--from", from)
	if r.code != 0 || r.stdout != "daily  2026-03-29T00:00:00Z\ndaily  2026-03-30T00:00:00Z\n" {
		t.Errorf("next without NATS: exit %d, stdout %q", r.code, r.stdout)
	}
	if !strings.Contains(r.stderr, "cannot tell which jobs are suspended") {
		t.Errorf("next without NATS: stderr %q, want a warning", r.stderr)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("next without NATS took %v", took)
	}
}
