package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
)

// jobsEnv is a NATS server and a configuration with runtime jobs enabled
// (a kind "echo", a file job "file.job"), running the CLI in-process.
type jobsEnv struct {
	t   *testing.T
	dir string
	cfg string
	out string // where the kind "echo" appends $CRONLOCK_JOB $CRONLOCK_PAYLOAD
}

func newJobsEnv(t *testing.T, runtime string) *jobsEnv {
	t.Helper()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	dir := t.TempDir()
	out := filepath.Join(dir, "runs.out")
	cfg := writeFile(t, dir, "cronlock.yaml", fmt.Sprintf(`
nats: {url: %s}
lock: {lease: 2s, renew: 500ms}
http: {listen: ""}
log: {level: info}
shutdown_grace: 2s
runtime_jobs: %s
kinds:
  - name: echo
    shell: echo "$CRONLOCK_JOB $CRONLOCK_PAYLOAD" >> %q
jobs:
  - name: file.job
    schedule: "@yearly"
    shell: "true"
`, url, runtime, out))
	return &jobsEnv{t: t, dir: dir, cfg: cfg, out: out}
}

// run runs cronlock ARGS -c CFG (args[0] is the command, "jobs put" say)
// with stdin, and checks the exit code.
func (e *jobsEnv) run(code int, stdin string, args ...string) result {
	e.t.Helper()
	cmd := strings.Fields(args[0])
	args = append(append(cmd, "-c", e.cfg), args[1:]...)
	var stdout, stderr bytes.Buffer
	c := &cli{stdin: strings.NewReader(stdin), stdout: &stdout, stderr: &stderr, getenv: func(string) string { return "" }}
	r := result{code: c.main(context.Background(), args), stdout: stdout.String(), stderr: stderr.String()}
	if r.code != code {
		e.t.Fatalf("cronlock %q: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, r.code, code, r.stdout, r.stderr)
	}
	return r
}

// decodeOut unmarshals a command's JSON output.
func decodeOut[T any](t *testing.T, r result) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	return v
}

// TestJobsCommands: put a YAML list from a file and JSON from stdin, get
// --json, list with paging, history with who and put/delete, delete.
func TestJobsCommands(t *testing.T) {
	t.Parallel()
	e := newJobsEnv(t, "{enabled: true}")
	var list strings.Builder
	list.WriteString("jobs:\n")
	for i := range 5 {
		fmt.Fprintf(&list, "  - name: tenant-%d\n    schedule: '@daily'\n    kind: echo\n    payload: {tenant: t%d}\n", i, i)
	}
	r := e.run(0, "", "jobs put", "-f", writeFile(t, e.dir, "defs.yaml", list.String()))
	if n := strings.Count(r.stdout, "put tenant-"); n != 5 || !strings.Contains(r.stdout, "put tenant-3 revision ") {
		t.Fatalf("put printed:\n%s", r.stdout)
	}
	e.run(0, `{"name": "acme.report", "schedule": "0 9 * * MON", "kind": "echo", "payload": {"tenant": "acme"}}`, "jobs put")

	type stored struct {
		Name, By   string
		Revision   uint64
		At         time.Time
		Definition map[string]any
	}
	got := decodeOut[stored](t, e.run(0, "", "jobs get", "--json", "acme.report"))
	if got.Name != "acme.report" || got.Revision == 0 || got.By != userAtHost() || time.Since(got.At) > time.Minute ||
		got.Definition["schedule"] != "0 9 * * MON" || got.Definition["payload"].(map[string]any)["tenant"] != "acme" {
		t.Errorf("get --json = %+v", got)
	}
	if r := e.run(0, "", "jobs get", "acme.report"); !strings.Contains(r.stdout, `"kind": "echo"`) {
		t.Errorf("get:\n%s", r.stdout)
	}

	// Paging: 6 jobs, 4 a page.
	type page struct {
		Jobs      []stored
		NextAfter string `json:"next_after"`
	}
	p1 := decodeOut[page](t, e.run(0, "", "jobs list", "--json", "--limit", "4"))
	if len(p1.Jobs) != 4 || p1.Jobs[0].Name != "acme.report" || p1.NextAfter != "tenant-2" {
		t.Fatalf("page 1 = %+v", p1)
	}
	p2 := decodeOut[page](t, e.run(0, "", "jobs list", "--json", "--limit", "4", "--after", p1.NextAfter))
	if len(p2.Jobs) != 2 || p2.Jobs[0].Name != "tenant-3" || p2.Jobs[1].Name != "tenant-4" || p2.NextAfter != "" {
		t.Fatalf("page 2 = %+v", p2)
	}
	if r := e.run(0, "", "jobs list", "--limit", "4"); !strings.Contains(r.stdout, "tenant-0") ||
		!strings.Contains(r.stderr, "--after tenant-2") {
		t.Errorf("list:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}

	// A change, a delete; the history says who and what.
	e.run(0, `{"name": "acme.report", "schedule": "0 10 * * MON", "kind": "echo"}`, "jobs put", "--if-match", fmt.Sprint(got.Revision))
	e.run(1, `{"name": "acme.report", "schedule": "@daily", "kind": "echo"}`, "jobs put", "--if-match", fmt.Sprint(got.Revision))
	e.run(1, "", "jobs delete", "--if-match", fmt.Sprint(got.Revision), "acme.report")
	if r := e.run(0, "", "jobs delete", "acme.report"); !strings.HasPrefix(r.stdout, "deleted acme.report revision ") {
		t.Errorf("delete printed %q", r.stdout)
	}
	e.run(1, "", "jobs get", "acme.report")
	e.run(1, "", "jobs delete", "acme.report")
	type history struct {
		Revisions []struct {
			Operation, By           string
			Created                 bool
			Added, Removed, Changed []string
		}
	}
	h := decodeOut[history](t, e.run(0, "", "jobs history", "--json", "acme.report"))
	if len(h.Revisions) != 3 {
		t.Fatalf("history = %+v", h)
	}
	if r := h.Revisions; r[0].Operation != "put" || !r[0].Created || r[0].By != userAtHost() ||
		r[1].Operation != "put" || strings.Join(r[1].Changed, ",") != "schedule" || strings.Join(r[1].Removed, ",") != "payload" ||
		r[2].Operation != "delete" || r[2].By != userAtHost() {
		t.Errorf("history = %+v", h)
	}
	if r := e.run(0, "", "jobs history", "acme.report"); !strings.Contains(r.stdout, "removed payload; changed schedule") ||
		!strings.Contains(r.stdout, "delete") {
		t.Errorf("history:\n%s", r.stdout)
	}
}

// TestJobsRefusals: a bad definition exits 2 naming FILE:LINE: field, a
// file job's name, max_jobs exceeded and runtime jobs disabled exit 1, and
// nothing is stored by any of them.
func TestJobsRefusals(t *testing.T) {
	t.Parallel()
	e := newJobsEnv(t, "{enabled: true, max_jobs: 3}")
	defs := writeFile(t, e.dir, "bad.yaml", "jobs:\n  - name: ok\n    schedule: '@daily'\n    kind: echo\n  - name: bad\n    schedule: '61 * * * *'\n    kind: echo\n")
	if r := e.run(2, "", "jobs put", "-f", defs); !strings.Contains(r.stderr, defs+":6: jobs[1].schedule: ") {
		t.Errorf("bad definition: stderr %q", r.stderr)
	}
	if r := e.run(2, `{"name": "x", "schedule": "@daily", "kind": "nope"}`, "jobs put"); !strings.Contains(r.stderr, `stdin:1: kind: unknown kind "nope"`) {
		t.Errorf("bad kind: stderr %q", r.stderr)
	}
	r := e.run(1, "name: file.job\nschedule: '@daily'\nkind: echo\n", "jobs put")
	if want := `stdin:1: name: "file.job" is a job of the configuration file ` + e.cfg + ":12"; !strings.Contains(r.stderr, want) {
		t.Errorf("file job's name: stderr %q, want %q", r.stderr, want)
	}
	e.run(0, "jobs:\n  - {name: a, schedule: '@daily', kind: echo}\n  - {name: b, schedule: '@daily', kind: echo}\n", "jobs put")
	r = e.run(1, "jobs:\n  - {name: a, schedule: '@hourly', kind: echo}\n  - {name: c, schedule: '@daily', kind: echo}\n  - {name: d, schedule: '@daily', kind: echo}\n", "jobs put")
	if !strings.Contains(r.stderr, "over runtime_jobs.max_jobs 3") {
		t.Errorf("max_jobs: stderr %q", r.stderr)
	}
	e.run(0, "{name: c, schedule: '@daily', kind: echo}", "jobs put") // a replacement and one new name fit
	e.run(0, "{name: a, schedule: '@weekly', kind: echo}", "jobs put")
	type page struct{ Jobs []struct{ Name string } }
	if p := decodeOut[page](t, e.run(0, "", "jobs list", "--json")); len(p.Jobs) != 3 {
		t.Errorf("stored = %+v, want a, b, c", p)
	}
	r = e.run(1, "{name: a, schedule: '@daily', kind: echo}", "jobs put", "--if-match", "1")
	if !strings.Contains(r.stderr, "stored ") || !strings.Contains(r.stderr, "want 1") {
		t.Errorf("--if-match mismatch: stderr %q", r.stderr)
	}

	off := newJobsEnv(t, "{enabled: false}")
	for _, args := range [][]string{{"jobs put"}, {"jobs get", "x"}, {"jobs list"}, {"jobs delete", "x"}, {"jobs history", "x"}} {
		r := off.run(1, "{name: x, schedule: '@daily', kind: echo}", args...)
		if !strings.Contains(r.stderr, "runtime_jobs: {enabled: true}") {
			t.Errorf("%v disabled: stderr %q", args, r.stderr)
		}
	}
	if r := cronlock(t, nil, "help"); !strings.Contains(r.stdout, "\n  jobs      put, get, list, delete") {
		t.Errorf("help does not list jobs:\n%s", r.stdout)
	}
	if r := off.run(0, "", "jobs --help"); !strings.Contains(r.stdout, "history  show a runtime job's kept revisions") {
		t.Errorf("jobs --help:\n%s", r.stdout)
	}
}

// TestJobsDaemon: a runtime job put by the built binary runs on a `cronlock
// run` with its payload, status --json shows it with source runtime (the
// file job with source file), suspend takes its name, and after jobs
// delete it runs no more.
func TestJobsDaemon(t *testing.T) {
	t.Parallel()
	e := newJobsEnv(t, "{enabled: true}")
	d := startDaemon(t, e.dir, e.cfg)
	d.waitOutput("runtime jobs scheduled; following the bucket", 20*time.Second)
	put := exec.Command(binary(t), "jobs", "put", "-c", e.cfg)
	put.Env = quickExit
	put.Stdin = strings.NewReader(`{"name": "tick", "schedule": "* * * * * *", "kind": "echo", "payload": {"tenant": "acme"}}`)
	if out, err := put.CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "put tick revision ") {
		t.Fatalf("jobs put: %v\n%s", err, out)
	}
	waitFor(t, 10*time.Second, "a run of the runtime job", func() bool { return len(fileLines(t, e.out)) > 0 })
	if line := fileLines(t, e.out)[0]; line != `tick {"tenant":"acme"}` {
		t.Errorf("the run wrote %q", line)
	}
	r := runBinary(t, "status", "-c", e.cfg, "--json")
	wantExit(t, r, 0, "status --json")
	sources := map[string]string{}
	for _, s := range decodeOut[[]statusJSON](t, result{stdout: r.stdout}) {
		sources[s.Job] = s.Source
	}
	if sources["tick"] != "runtime" || sources["file.job"] != "file" {
		t.Errorf("status --json sources = %v", sources)
	}
	wantExit(t, runBinary(t, "status", "-c", e.cfg, "tick"), 0, "status tick")
	wantExit(t, runBinary(t, "status", "-c", e.cfg, "nosuch"), 2, "status nosuch")
	wantExit(t, runBinary(t, "suspend", "-c", e.cfg, "tick"), 0, "suspend tick")
	// Suspended, the job starts no tick, so the trigger meets at most the
	// run that was in progress when the suspension came (exit 1, running
	// elsewhere): then once more.
	r = runBinary(t, "trigger", "-c", e.cfg, "tick")
	for i := 0; i < 5 && r.code == 1 && strings.Contains(r.stderr, "running elsewhere"); i++ {
		time.Sleep(200 * time.Millisecond)
		r = runBinary(t, "trigger", "-c", e.cfg, "tick")
	}
	if r.code != 0 || !strings.Contains(r.stdout, "tick: succeeded") {
		t.Errorf("trigger tick: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	wantExit(t, runBinary(t, "resume", "-c", e.cfg, "tick"), 0, "resume tick")
	wantExit(t, runBinary(t, "jobs", "delete", "-c", e.cfg, "tick"), 0, "jobs delete")
	d.waitOutput("runtime job removed", 5*time.Second)
	time.Sleep(time.Second) // a run that had started when the delete came ends
	n := len(fileLines(t, e.out))
	time.Sleep(2 * time.Second)
	if after := len(fileLines(t, e.out)); after != n {
		t.Errorf("the deleted job ran %d more times", after-n)
	}
}
