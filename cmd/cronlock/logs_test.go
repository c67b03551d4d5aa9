package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/internal/testlog"
)

// follower is a `cronlock logs -f` process started by a test.
type follower struct {
	cmd            *exec.Cmd
	stdout, stderr *testlog.Buffer
	exited         chan struct{}
	err            error
}

// startFollower starts `cronlock logs -f -c cfg job` and waits until it
// follows a running run.
func startFollower(t *testing.T, cfg, job string) *follower {
	t.Helper()
	f := &follower{cmd: exec.Command(binary(t), "logs", "-f", "-c", cfg, job),
		stdout: &testlog.Buffer{}, stderr: &testlog.Buffer{}, exited: make(chan struct{})}
	f.cmd.Stdout, f.cmd.Stderr = f.stdout, f.stderr
	if err := f.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { f.err = f.cmd.Wait(); close(f.exited) }()
	t.Cleanup(func() {
		_ = f.cmd.Process.Kill()
		<-f.exited
	})
	waitFor(t, 20*time.Second, "logs -f following the run", func() bool {
		select {
		case <-f.exited:
			t.Fatalf("logs -f exited (%v) before following:\n%s", f.err, f.stderr)
		default:
		}
		return strings.Contains(f.stderr.String(), "following the run")
	})
	return f
}

// wait waits for the follower to exit and fails unless it exits 0.
func (f *follower) wait(t *testing.T, timeout time.Duration) {
	t.Helper()
	select {
	case <-f.exited:
	case <-time.After(timeout):
		t.Fatalf("logs -f did not exit within %v of the run's end:\n%s", timeout, f.stderr)
	}
	if f.err != nil {
		t.Fatalf("logs -f: %v\n%s", f.err, f.stderr)
	}
}

// A job printing a line every 150 ms: `logs -f` prints the lines in order
// while the run runs and exits 0 when it ends; `logs` without -f, during
// the run, says it runs and how to follow it, and after it prints the
// kept tail.
func TestLogsFollow(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	dir := t.TempDir()
	gate := filepath.Join(dir, "go")
	cfg := writeFile(t, dir, "c.yaml", fmt.Sprintf(`
nats: {url: %s}
http: {listen: ""}
shutdown_grace: 1s
lock: {lease: 2s, renew: 500ms, owner: replica-a}
jobs:
  - name: lines
    schedule: "@yearly"
    env: {GATE: %q}
    shell: 'while [ ! -e "$GATE" ]; do sleep 0.02; done; for i in 1 2 3 4 5 6 7 8 9 10; do echo "line $i"; sleep 0.15; done'
`, url, gate))
	d := startDaemon(t, dir, cfg)
	running(d)
	if r := cronlock(t, nil, "logs", "-c", cfg, "lines"); r.code != 0 || !strings.Contains(r.stderr, "no finished run") {
		t.Fatalf("logs before any run: exit %d, stderr %q; want 0 and no finished run", r.code, r.stderr)
	}
	if r := cronlock(t, nil, "trigger", "--no-wait", "-c", cfg, "lines"); r.code != 0 {
		t.Fatalf("trigger: exit %d\n%s", r.code, r.stderr)
	}
	f := startFollower(t, cfg, "lines")
	if r := cronlock(t, nil, "logs", "-c", cfg, "lines"); r.code != 0 || !strings.Contains(r.stderr, "is running on replica-a") ||
		!strings.Contains(r.stderr, "logs -f lines") {
		t.Errorf("logs during the run: exit %d, stderr %q; want 0, the run on replica-a and a hint at -f", r.code, r.stderr)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// Live: line 3 is printed while the run still runs (it has 1 s left).
	waitFor(t, 10*time.Second, "line 3 from logs -f", func() bool { return strings.Contains(f.stdout.String(), "line 3\n") })
	select {
	case <-f.exited:
		t.Fatalf("logs -f exited right after line 3: not live")
	default:
	}
	if strings.Contains(f.stdout.String(), "line 10") {
		t.Errorf("line 10 already printed with line 3: not live")
	}
	f.wait(t, 15*time.Second)
	var want strings.Builder
	for i := 1; i <= 10; i++ {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	if got := f.stdout.String(); got != want.String() {
		t.Errorf("logs -f printed %q, want %q", got, want.String())
	}
	if !strings.Contains(f.stderr.String(), "ended: succeeded") {
		t.Errorf("logs -f stderr %q: want the run's end, succeeded", f.stderr)
	}
	r := cronlock(t, nil, "logs", "-c", cfg, "lines")
	if r.code != 0 || r.stdout != want.String() || !strings.Contains(r.stderr, "last run succeeded on replica-a") {
		t.Errorf("logs after the run: exit %d, stdout %q, stderr %q; want the kept tail", r.code, r.stdout, r.stderr)
	}
	if r := cronlock(t, nil, "logs", "-c", cfg, "nope"); r.code != 2 {
		t.Errorf("logs of an unknown job: exit %d, want 2\n%s", r.code, r.stderr)
	}
}

// floodBytes is what the flooding job writes: 200,000 lines of 100 bytes.
const floodBytes = 200_000 * 100

var droppedMarker = regexp.MustCompile(`\[\.\.\. (\d+) bytes dropped\]\n`)

// A job writing as fast as it can: followed, it is not slowed much
// (compared with a run nobody follows), cronlock's memory stays bounded,
// and the follower gets every byte or a marker for each byte dropped.
func TestLogsFlood(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	dir := t.TempDir()
	gate, durs := filepath.Join(dir, "go"), filepath.Join(dir, "durations")
	cfg := writeFile(t, dir, "c.yaml", fmt.Sprintf(`
nats: {url: %s}
http: {listen: ""}
shutdown_grace: 1s
lock: {lease: 2s, renew: 500ms}
jobs:
  - name: flood
    schedule: "@yearly"
    env: {GATE: %q, DURS: %q}
    shell: 'while [ ! -e "$GATE" ]; do sleep 0.02; done; s=$(date +%%s%%N); yes %s | head -n 200000; echo $(( ($(date +%%s%%N) - s) / 1000000 )) >> "$DURS"'
`, url, gate, durs, strings.Repeat("a", 99)))
	d := startDaemon(t, dir, cfg)
	running(d)
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := cronlock(t, nil, "trigger", "-c", cfg, "flood"); r.code != 0 { // nobody follows
		t.Fatalf("trigger: exit %d\n%s", r.code, r.stderr)
	}
	if err := os.Remove(gate); err != nil {
		t.Fatal(err)
	}
	if r := cronlock(t, nil, "trigger", "--no-wait", "-c", cfg, "flood"); r.code != 0 {
		t.Fatalf("trigger: exit %d\n%s", r.code, r.stderr)
	}
	f := startFollower(t, cfg, "flood")
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f.wait(t, 60*time.Second)
	out := f.stdout.String()
	var dropped int
	for _, m := range droppedMarker.FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(m[1])
		dropped += n
	}
	got := len(droppedMarker.ReplaceAllString(out, ""))
	ms := fileLines(t, durs)
	rss := vmHWM(d.cmd.Process.Pid)
	t.Logf("flood of %d bytes: %v ms unfollowed, followed; follower got %d bytes and %d dropped; cronlock peak RSS %d MB",
		floodBytes, ms, got, dropped, rss>>20)
	if got+dropped != floodBytes || (dropped == 0 && got != floodBytes) {
		t.Errorf("follower: %d bytes + %d marked dropped, want the %d written", got, dropped, floodBytes)
	}
	if dropped == 0 {
		t.Logf("no byte dropped: the follower kept up")
	}
	if len(ms) != 2 {
		t.Fatalf("durations %v: want two runs'", ms)
	}
	alone, followed := atoi(t, ms[0]), atoi(t, ms[1])
	if followed > 3*alone+2000 {
		t.Errorf("the followed flood took %d ms, the unfollowed %d ms: following slows the job", followed, alone)
	}
	maxRSS := int64(150 << 20)
	if raceEnabled {
		maxRSS = 600 << 20
	}
	if rss > maxRSS {
		t.Errorf("cronlock's peak RSS %d MB, want < %d MB", rss>>20, maxRSS>>20)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		t.Fatal(err)
	}
	return n
}
