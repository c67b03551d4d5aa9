package main

import (
	"errors"
	"github.com/cronlock/cronlock/internal/testlog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// daemon is a `cronlock run` process started by a test.
type daemon struct {
	t       *testing.T
	cmd     *exec.Cmd
	out     *testlog.Buffer // stdout and stderr
	exited  chan struct{}
	waitErr error
}

// startDaemon starts `cronlock run -c config` in dir. At the end of the test
// it is stopped with SIGTERM (SIGKILL after 30 s) unless it has exited.
func startDaemon(t *testing.T, dir, config string) *daemon {
	t.Helper()
	return startDaemonOf(t, binary(t), dir, config)
}

// startDaemonOf is startDaemon with the cronlock binary at bin (another
// release's, say).
func startDaemonOf(t *testing.T, bin, dir, config string) *daemon {
	t.Helper()
	return startDaemonCmd(t, dir, exec.Command(bin, "run", "-c", config))
}

// startDaemonCmd is startDaemon of a command that runs `cronlock run` (a
// shell setting limits first, say).
func startDaemonCmd(t *testing.T, dir string, cmd *exec.Cmd) *daemon {
	t.Helper()
	cmd.Dir = dir
	out := &testlog.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &daemon{t: t, cmd: cmd, out: out, exited: make(chan struct{})}
	go func() {
		d.waitErr = cmd.Wait()
		close(d.exited)
	}()
	t.Cleanup(func() {
		d.stop()
		if t.Failed() {
			t.Logf("cronlock run (pid %d) output:\n%s", cmd.Process.Pid, out)
		}
	})
	return d
}

// stop sends SIGTERM and waits for the process to exit.
func (d *daemon) stop() {
	select {
	case <-d.exited:
		return
	default:
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(30 * time.Second):
		d.t.Errorf("cronlock run (pid %d) did not exit within 30s of SIGTERM", d.cmd.Process.Pid)
		d.cmd.Process.Kill()
		<-d.exited
	}
}

// kill sends SIGKILL and waits until the process is reaped.
func (d *daemon) kill() {
	d.cmd.Process.Kill()
	<-d.exited
}

// alive reports whether the process has not exited.
func (d *daemon) alive() bool {
	select {
	case <-d.exited:
		return false
	default:
		return true
	}
}

// waitOutput waits until the output contains s.
func (d *daemon) waitOutput(s string, timeout time.Duration) {
	d.t.Helper()
	waitFor(d.t, timeout, "output "+strconv.Quote(s), func() bool {
		if !d.alive() && !strings.Contains(d.out.String(), s) {
			d.t.Fatalf("cronlock run exited (%v) before writing %q", d.waitErr, s)
		}
		return strings.Contains(d.out.String(), s)
	})
}

// waitFor polls cond every 20 ms until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fileLines returns the complete lines of the file (nil if it does not
// exist yet).
func fileLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	} else {
		return nil
	}
	return strings.Split(s, "\n")
}

// gone reports whether pid no longer runs: it does not exist, or it is a
// zombie (dead, waiting for a parent that may never reap it, such as an
// init that does not).
func gone(pid int) bool {
	err := syscall.Kill(pid, 0)
	if errors.Is(err, syscall.ESRCH) {
		return true
	}
	b, rerr := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if rerr != nil {
		return errors.Is(rerr, os.ErrNotExist)
	}
	// pid (comm) state ...; comm may contain spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}
