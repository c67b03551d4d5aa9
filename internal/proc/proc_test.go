//go:build linux

package proc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"github.com/cronlock/cronlock/internal/proc"
	"github.com/cronlock/cronlock/internal/testlog"
)

// parentEnv selects the "parent" mode of the test binary, in which it plays
// cronlock for TestParentSIGKILLed; its value is the pid file to use.
const parentEnv = "PROC_TEST_PARENT_PIDFILE"

// deathTimeout bounds how long a killed process may take to disappear.
const deathTimeout = 10 * time.Second

func TestMain(m *testing.M) {
	proc.Init()
	if pidfile := os.Getenv(parentEnv); pidfile != "" {
		runParent(pidfile)
	}
	goleak.VerifyTestMain(m)
}

// runParent runs a job whose shell leaves two background sleeps in the group,
// writes "shim sh sleep sleep" pids to pidfile, and waits. It returns only if
// something went wrong; the test SIGKILLs this process.
func runParent(pidfile string) {
	err := proc.Command{
		Shell: `sleep 300 & a=$!; sleep 300 & b=$!; ` +
			`echo "$PPID $$ $a $b" > "$PIDFILE.tmp" && mv "$PIDFILE.tmp" "$PIDFILE"; wait`,
		Env: map[string]string{"PIDFILE": pidfile},
	}.Run(context.Background(), nil)
	fmt.Fprintf(os.Stderr, "parent: Run returned %v\n", err)
	os.Exit(1)
}

// logBuffer collects a Command's log output.
type logBuffer struct{ testlog.Buffer }

type entry struct {
	Level     string `json:"level"`
	Stream    string `json:"stream"`
	Message   string `json:"message"`
	Truncated bool   `json:"truncated"`
}

func (b *logBuffer) entries(t *testing.T) []entry {
	t.Helper()
	var es []entry
	for _, line := range bytes.Split(bytes.TrimSpace([]byte(b.String())), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var e entry
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("bad log line %q: %v", line, err)
		}
		es = append(es, e)
	}
	return es
}

// messages returns the messages logged for stream, in order.
func (b *logBuffer) messages(t *testing.T, stream string) []string {
	t.Helper()
	var ms []string
	for _, e := range b.entries(t) {
		if e.Stream == stream {
			ms = append(ms, e.Message)
		}
	}
	return ms
}

// logged returns a Command's Logger writing into a new logBuffer.
func logged() (zerolog.Logger, *logBuffer) {
	b := &logBuffer{}
	return zerolog.New(b), b
}

// noLeaks checks at the end of the test that no goroutine was left behind.
func noLeaks(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
}

func TestExitStatus(t *testing.T) {
	noLeaks(t)
	for _, tc := range []struct {
		name string
		cmd  proc.Command
		want *proc.ExitError // nil: success
	}{
		{"exit 0", proc.Command{Shell: "exit 0"}, nil},
		{"exit 3", proc.Command{Shell: "exit 3"}, &proc.ExitError{Code: 3}},
		{"argv false", proc.Command{Argv: []string{"false"}}, &proc.ExitError{Code: 1}},
		{"exit 137 is not a signal", proc.Command{Shell: "exit 137"}, &proc.ExitError{Code: 137}},
		{"signal", proc.Command{Shell: "kill -USR1 $$"}, &proc.ExitError{Code: -1, Signal: syscall.SIGUSR1}},
		{"SIGKILL", proc.Command{Shell: "kill -KILL $$"}, &proc.ExitError{Code: -1, Signal: syscall.SIGKILL}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cmd.Run(context.Background(), nil)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Run: %v, want nil", err)
				}
				return
			}
			var ee *proc.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("Run: %v, want *ExitError", err)
			}
			if *ee != *tc.want {
				t.Fatalf("Run: %+v, want %+v", *ee, *tc.want)
			}
			want := tc.want.Code
			if tc.want.Signal != 0 {
				want = 128 + int(tc.want.Signal)
			}
			if got := ee.ExitCode(); got != want {
				t.Fatalf("ExitCode() = %d, want %d", got, want)
			}
		})
	}
}

func TestConcurrentRuns(t *testing.T) {
	noLeaks(t)
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Go(func() {
			errs[i] = proc.Command{Shell: fmt.Sprintf("exit %d", i)}.Run(context.Background(), nil)
		})
	}
	wg.Wait()
	for i, err := range errs {
		var ee *proc.ExitError
		switch {
		case i == 0 && err != nil:
			t.Errorf("run 0: %v", err)
		case i > 0 && (!errors.As(err, &ee) || ee.Code != i):
			t.Errorf("run %d: %v, want exit status %d", i, err, i)
		}
	}
}

func TestEnvironment(t *testing.T) {
	noLeaks(t)
	t.Setenv("PROC_TEST_INHERITED", "inherited")
	log, buf := logged()
	err := proc.Command{
		Shell:  `echo "$PROC_TEST_INHERITED|$FOO|$CRONLOCK_JOB|${CRONLOCK_PROC_SHIM-unset}"`,
		Env:    map[string]string{"FOO": "from Env", "CRONLOCK_JOB": "overridden"},
		Logger: log,
	}.Run(context.Background(), []string{"CRONLOCK_JOB=nightly"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"inherited|from Env|nightly|unset"}
	if got := buf.messages(t, "stdout"); !slices.Equal(got, want) {
		t.Fatalf("stdout %q, want %q", got, want)
	}
}

func TestNoLifelineInJob(t *testing.T) {
	noLeaks(t)
	log, buf := logged()
	err := proc.Command{
		Shell:  `for fd in 3 4 5 6; do [ -e /proc/$$/fd/$fd ] && echo "fd $fd open"; done; echo done`,
		Logger: log,
	}.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := buf.messages(t, "stdout"), []string{"done"}; !slices.Equal(got, want) {
		t.Fatalf("stdout %q, want %q", got, want)
	}
}

func TestDir(t *testing.T) {
	noLeaks(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "script"), []byte("#!/bin/sh\necho script ran\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	log, buf := logged()
	if err := (proc.Command{Argv: []string{"pwd"}, Dir: dir, Logger: log}).Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if err := (proc.Command{Argv: []string{"./script"}, Dir: dir, Logger: log}).Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if got, want := buf.messages(t, "stdout"), []string{dir, "script ran"}; !slices.Equal(got, want) {
		t.Fatalf("stdout %q, want %q", got, want)
	}
}

func TestArgvIsNotShell(t *testing.T) {
	noLeaks(t)
	log, buf := logged()
	err := proc.Command{Argv: []string{"printf", `%s\n`, "a  b", "$HOME;", "*"}, Logger: log}.
		Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := buf.messages(t, "stdout"), []string{"a  b", "$HOME;", "*"}; !slices.Equal(got, want) {
		t.Fatalf("stdout %q, want %q", got, want)
	}
}

func TestInvalid(t *testing.T) {
	noLeaks(t)
	missingDir := filepath.Join(t.TempDir(), "missing")
	for _, tc := range []struct {
		name  string
		cmd   proc.Command
		extra []string
	}{
		{"neither", proc.Command{}, nil},
		{"both", proc.Command{Argv: []string{"true"}, Shell: "true"}, nil},
		{"empty argv0", proc.Command{Argv: []string{""}}, nil},
		{"bad Env key", proc.Command{Shell: "true", Env: map[string]string{"A=B": "c"}}, nil},
		{"bad extraEnv", proc.Command{Shell: "true"}, []string{"NOEQUALS"}},
		{"missing command", proc.Command{Argv: []string{"/nonexistent/cronlock-test"}}, nil},
		{"command not in PATH", proc.Command{Argv: []string{"cronlock-no-such-command"}}, nil},
		{"missing dir", proc.Command{Shell: "true", Dir: missingDir}, nil},
		{"negative Grace", proc.Command{Shell: "true", Grace: -time.Second}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cmd.Run(context.Background(), tc.extra)
			var ee *proc.ExitError
			if err == nil || errors.As(err, &ee) {
				t.Fatalf("Run: %v, want a non-exit error", err)
			}
			t.Log(err)
		})
	}
}

func TestCanceledBeforeStart(t *testing.T) {
	noLeaks(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := t.TempDir()
	err := proc.Command{Shell: "touch ran", Dir: dir}.Run(ctx, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v, want context.Canceled", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Fatal("command ran")
	}
}

func TestOutputLines(t *testing.T) {
	noLeaks(t)
	log, buf := logged()
	err := proc.Command{
		Shell:  `echo out1; echo err1 >&2; printf 'out2\r\n\n'; echo err2 >&2; printf 'no newline'`,
		Logger: log,
	}.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range buf.entries(t) {
		want := map[string]string{"stdout": "info", "stderr": "warn"}[e.Stream]
		if want == "" || e.Level != want || e.Truncated {
			t.Errorf("entry %+v: want level %q for stream %q, not truncated", e, want, e.Stream)
		}
	}
	if got, want := buf.messages(t, "stdout"), []string{"out1", "out2", "", "no newline"}; !slices.Equal(got, want) {
		t.Errorf("stdout %q, want %q", got, want)
	}
	if got, want := buf.messages(t, "stderr"), []string{"err1", "err2"}; !slices.Equal(got, want) {
		t.Errorf("stderr %q, want %q", got, want)
	}
}

// The tail holds the last bytes of both streams, whole lines of each.
func TestOutputTail(t *testing.T) {
	noLeaks(t)
	const n = 200
	tail := proc.NewTail(n)
	err := proc.Command{Shell: `seq -f 'out %g' 1 300; seq -f 'err %g' 1 300 >&2`, Tail: tail}.
		Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := tail.String()
	if len(s) != n || (!strings.HasSuffix(s, "\nout 300\n") && !strings.HasSuffix(s, "\nerr 300\n")) {
		t.Fatalf("tail %q: want %d bytes ending with the last line of a stream", s, n)
	}
	// Each stream's lines are whole and consecutive.
	last := map[string]int{}
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for _, l := range lines[1:] { // the first is cut
		stream, num, ok := strings.Cut(l, " ")
		k, err := strconv.Atoi(num)
		if !ok || err != nil || (stream != "out" && stream != "err") || (last[stream] != 0 && k != last[stream]+1) {
			t.Fatalf("line %q out of place in tail %q", l, s)
		}
		last[stream] = k
	}
}

// The tail is not cut at MaxLine.
func TestOutputTailLongLine(t *testing.T) {
	noLeaks(t)
	tail := proc.NewTail(2000)
	err := proc.Command{Shell: `head -c 5000 /dev/zero | tr '\0' a; echo; echo end`, MaxLine: 100, Tail: tail}.
		Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Repeat("a", 1995) + "\nend\n"; tail.String() != want {
		t.Fatalf("tail %d bytes %.20q…, want %d bytes", len(tail.String()), tail.String(), len(want))
	}
}

func TestLongLines(t *testing.T) {
	noLeaks(t)
	log, buf := logged()
	err := proc.Command{
		// A 10 MB line, then lines of exactly, and one past, MaxLine
		// bytes, then a cut inside a two-byte character (é).
		Shell: `head -c 10000000 /dev/zero | tr '\0' a; echo; echo after; ` +
			`printf '%01024d\r\n' 0; printf '%01025d\n' 0; printf '%01023dé\n' 0; printf 'tail'`,
		MaxLine: 1024,
		Logger:  log,
	}.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	es := buf.entries(t)
	zeros := strings.Repeat("0", 1024)
	want := []entry{
		{Message: strings.Repeat("a", 1024), Truncated: true},
		{Message: "after"},
		{Message: zeros},
		{Message: zeros, Truncated: true},
		{Message: zeros[:1023], Truncated: true},
		{Message: "tail"},
	}
	if len(es) != len(want) {
		t.Fatalf("%d entries, want %d", len(es), len(want))
	}
	for i, e := range es {
		if e.Message != want[i].Message || e.Truncated != want[i].Truncated {
			t.Errorf("entry %d: %d bytes %.20q… truncated=%v, want %d bytes %.20q… truncated=%v",
				i, len(e.Message), e.Message, e.Truncated, len(want[i].Message), want[i].Message, want[i].Truncated)
		}
	}
}

func TestLongLineMemory(t *testing.T) {
	noLeaks(t)
	const size = 10 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	err := proc.Command{
		Shell:   fmt.Sprintf(`head -c %d /dev/zero | tr '\0' a`, size),
		MaxLine: 1024,
	}.Run(context.Background(), nil)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	// Everything Run allocated, garbage included, not just what is live.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size/8 {
		t.Fatalf("Run allocated %d bytes for a %d byte line", alloc, size)
	}
}

func TestTimeoutTermIgnored(t *testing.T) {
	noLeaks(t)
	const grace = 200 * time.Millisecond
	const timeout = time.Second // long enough for sh to reach the trap
	log, buf := logged()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	err := proc.Command{Shell: "trap '' TERM; echo ready; sleep 60", Grace: grace, Logger: log}.Run(ctx, nil)
	elapsed := time.Since(start)
	if got := buf.messages(t, "stdout"); !slices.Equal(got, []string{"ready"}) {
		t.Fatalf("stdout %q: sh did not reach the trap within %v", got, timeout)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run: %v, want context.DeadlineExceeded", err)
	}
	var ee *proc.ExitError
	if !errors.As(err, &ee) || ee.Signal != syscall.SIGKILL {
		t.Fatalf("Run: %v, want killed by SIGKILL", err)
	}
	if elapsed < timeout+grace || elapsed > timeout+grace+3*time.Second {
		t.Fatalf("Run took %v, want about %v", elapsed, timeout+grace)
	}
}

// NoGrace: SIGKILL follows SIGTERM at once, whatever Grace says.
func TestNoGrace(t *testing.T) {
	noLeaks(t)
	const timeout = time.Second // long enough for sh to reach the trap
	log, buf := logged()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	err := proc.Command{Shell: "trap '' TERM; echo ready; sleep 60", Grace: time.Minute, NoGrace: true, Logger: log}.Run(ctx, nil)
	elapsed := time.Since(start)
	if got := buf.messages(t, "stdout"); !slices.Equal(got, []string{"ready"}) {
		t.Fatalf("stdout %q: sh did not reach the trap within %v", got, timeout)
	}
	var ee *proc.ExitError
	if !errors.As(err, &ee) || ee.Signal != syscall.SIGKILL {
		t.Fatalf("Run: %v, want killed by SIGKILL", err)
	}
	if elapsed > timeout+5*time.Second {
		t.Fatalf("Run took %v, want about %v", elapsed, timeout)
	}
}

// With NoGrace the job's last lines are still read after it exited.
func TestNoGraceKeepsOutput(t *testing.T) {
	noLeaks(t)
	log, buf := logged()
	// A budget above the output, so that every line is logged.
	err := proc.Command{Shell: "seq 1 3000; seq 1 3000 >&2", NoGrace: true, Logger: log,
		LogLinesPerSecond: 100_000}.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, stream := range []string{"stdout", "stderr"} {
		got := buf.messages(t, stream)
		if len(got) != 3000 || got[2999] != "3000" {
			t.Errorf("%s: %d lines, want 3000", stream, len(got))
		}
	}
}

func TestTimeoutTerm(t *testing.T) {
	noLeaks(t)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := proc.Command{Argv: []string{"sleep", "60"}, Grace: time.Minute}.Run(ctx, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run: %v, want context.DeadlineExceeded", err)
	}
	var ee *proc.ExitError
	if !errors.As(err, &ee) || ee.Signal != syscall.SIGTERM {
		t.Fatalf("Run: %v, want killed by SIGTERM", err)
	}
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Fatalf("Run took %v; SIGTERM should have been enough", elapsed)
	}
}

func TestTimeoutCause(t *testing.T) {
	noLeaks(t)
	cause := errors.New("lock lost")
	ctx, cancel := context.WithTimeoutCause(context.Background(), 50*time.Millisecond, cause)
	defer cancel()
	err := proc.Command{Argv: []string{"sleep", "60"}}.Run(ctx, nil)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, cause) {
		t.Fatalf("Run: %v, want both context.DeadlineExceeded and the cause", err)
	}
}

func TestCancelKillsGrandchildren(t *testing.T) {
	noLeaks(t)
	pidfile := filepath.Join(t.TempDir(), "pids")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var runErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		runErr = proc.Command{
			Shell: `sleep 60 & a=$!; sleep 60 & b=$!; ` +
				`echo "$PPID $$ $a $b" > "$PIDFILE.tmp" && mv "$PIDFILE.tmp" "$PIDFILE"; wait`,
			Env: map[string]string{"PIDFILE": pidfile},
			// Never reached: the group's SIGTERM ends everything.
			Grace: time.Minute,
		}.Run(ctx, nil)
	}()
	defer func() { cancel(); <-done }()
	pids := awaitPids(t, pidfile, 4, done)
	start := time.Now()
	cancel()
	<-done
	if !errors.Is(runErr, context.Canceled) {
		t.Fatalf("Run: %v, want context.Canceled", runErr)
	}
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Fatalf("Run took %v after cancel; SIGTERM to the group should have been enough", elapsed)
	}
	awaitDeath(t, pids)
}

func TestLeftoversStopped(t *testing.T) {
	noLeaks(t)
	// The job records the leftover's pid and exits once the leftover is
	// ready: it has set its trap and started its own child, if any.
	const awaitReady = `echo $! > "$PIDFILE"; while [ ! -e "$READY" ]; do sleep 0.01; done`
	for _, tc := range []struct {
		name, shell string
		grace       time.Duration
		stdout      []string
	}{
		// SIGTERM suffices, and the leftover's last words are logged:
		// Run must neither wait for Grace nor stop reading early. The
		// leftover is ready once its sleep runs: a SIGTERM that reaches
		// the forked shell before it resets the trap and execs sleep is
		// lost, and sleep would then outlive the test's bounds.
		{
			name: "term",
			shell: `(trap 'echo leftover got TERM; exit 0' TERM; sleep 60 & ` +
				`until [ "$(cat /proc/$!/comm 2>/dev/null)" = sleep ]; do sleep 0.01; done; ` +
				`: > "$READY"; wait) & ` + awaitReady,
			grace:  time.Minute,
			stdout: []string{"leftover got TERM"},
		},
		// The leftover ignores SIGTERM: SIGKILL after Grace.
		{
			name:  "kill",
			shell: `(trap '' TERM; : > "$READY"; exec sleep 60) & ` + awaitReady,
			grace: 200 * time.Millisecond,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pidfile := filepath.Join(t.TempDir(), "pids")
			log, buf := logged()
			start := time.Now()
			err := proc.Command{
				Shell:  tc.shell,
				Env:    map[string]string{"PIDFILE": pidfile, "READY": pidfile + ".ready"},
				Grace:  tc.grace,
				Logger: log,
			}.Run(context.Background(), nil)
			if err != nil {
				t.Fatalf("Run: %v, want nil: the job itself exited 0", err)
			}
			if elapsed := time.Since(start); elapsed > 10*time.Second {
				t.Fatalf("Run took %v", elapsed)
			}
			if got := buf.messages(t, "stdout"); !slices.Equal(got, tc.stdout) {
				t.Fatalf("stdout %q, want %q", got, tc.stdout)
			}
			pids := readPids(t, pidfile)
			if len(pids) != 1 {
				t.Fatalf("pids %v", pids)
			}
			awaitDeath(t, pids)
		})
	}
}

// TestEscapeeDoesNotHang checks the documented limit: a process that leaves
// the group survives, but Run still returns although it holds stdout open.
func TestEscapeeDoesNotHang(t *testing.T) {
	noLeaks(t)
	pidfile := filepath.Join(t.TempDir(), "pids")
	log, buf := logged()
	start := time.Now()
	err := proc.Command{
		// The job exits once the escapee is in its new session.
		Shell: `setsid sh -c 'echo $$ > "$PIDFILE"; exec sleep 60' & ` +
			`while [ ! -s "$PIDFILE" ]; do sleep 0.01; done`,
		Env:    map[string]string{"PIDFILE": pidfile},
		Grace:  200 * time.Millisecond,
		Logger: log,
	}.Run(context.Background(), nil)
	elapsed := time.Since(start)
	pids := readPids(t, pidfile)
	for _, pid := range pids {
		if !dead(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL) // by pid: it escaped the group
		}
	}
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if elapsed > 10*time.Second {
		t.Fatalf("Run took %v", elapsed)
	}
	var warned bool
	for _, e := range buf.entries(t) {
		warned = warned || (e.Level == "warn" && e.Stream == "" && strings.Contains(e.Message, "output still open"))
	}
	if !warned {
		t.Fatalf("no warning about the open output in %+v", buf.entries(t))
	}
}

// TestParentSIGKILLed plays cronlock in a child process, SIGKILLs it while a
// job with background children runs, and checks the whole job dies.
func TestParentSIGKILLed(t *testing.T) {
	noLeaks(t)
	pidfile := filepath.Join(t.TempDir(), "pids")
	parent := exec.Command(os.Args[0], "-test.run=^$")
	parent.Env = append(os.Environ(), parentEnv+"="+pidfile)
	parent.Stderr = os.Stderr
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	var parentErr error
	parentDone := make(chan struct{})
	go func() {
		defer close(parentDone)
		parentErr = parent.Wait()
	}()
	defer func() {
		_ = parent.Process.Kill()
		<-parentDone
	}()

	pids := awaitPids(t, pidfile, 4, parentDone) // shim, sh, sleep, sleep
	for _, pid := range pids {
		if dead(pid) {
			t.Fatalf("pid %d of %v dead before the parent was killed", pid, pids)
		}
	}
	if err := parent.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-parentDone
	if ee, ok := parentErr.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("parent: %v, want killed by SIGKILL", parentErr)
	}
	awaitDeath(t, pids)
}

// awaitPids polls pidfile until it holds n pids. It fails the test if ended
// is closed first (the runner ended) or after deathTimeout.
func awaitPids(t *testing.T, pidfile string, n int, ended <-chan struct{}) []int {
	t.Helper()
	deadline := time.Now().Add(deathTimeout)
	for {
		if _, err := os.Stat(pidfile); err == nil {
			if pids := readPids(t, pidfile); len(pids) == n {
				return pids
			}
			t.Fatalf("%s does not hold %d pids", pidfile, n)
		}
		select {
		case <-ended:
			t.Fatal("runner ended before writing pids")
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pids in %s after %v", pidfile, deathTimeout)
		}
	}
}

func readPids(t *testing.T, pidfile string) []int {
	t.Helper()
	b, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil || pid <= 1 {
			t.Fatalf("bad pid %q in %s", f, pidfile)
		}
		pids = append(pids, pid)
	}
	return pids
}

// awaitDeath waits up to deathTimeout for every pid to be dead.
func awaitDeath(t *testing.T, pids []int) {
	t.Helper()
	deadline := time.Now().Add(deathTimeout)
	for _, pid := range pids {
		for !dead(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("pid %d (of %v) still alive after %v", pid, pids, deathTimeout)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// dead reports whether pid no longer runs. The test is not the parent of the
// job's processes, so it cannot reap them; an orphaned zombie is reaped by
// init, but PID 1 of some sandboxes never reaps, so a zombie counts as dead.
func dead(pid int) bool {
	if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return os.IsNotExist(err)
	}
	// Field 3, after "pid (comm)"; comm may contain spaces and parens.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return false
	}
	state := stat[i+2]
	return state == 'Z' || state == 'X'
}
