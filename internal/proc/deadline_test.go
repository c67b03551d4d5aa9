//go:build linux

package proc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/proc"
)

// deadlineSource is a movable lease deadline, as a job.DeadlineFunc.
type deadlineSource struct {
	mu      sync.Mutex
	d       time.Time
	changed chan struct{}
}

func newDeadlineSource(d time.Time) *deadlineSource {
	return &deadlineSource{d: d, changed: make(chan struct{})}
}

func (s *deadlineSource) get() (time.Time, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.d, s.changed
}

func (s *deadlineSource) set(d time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d = d
	close(s.changed)
	s.changed = make(chan struct{})
}

// wantDeadlineKill fails unless err reports the lease-deadline SIGKILL.
func wantDeadlineKill(t *testing.T, err error) {
	t.Helper()
	var ee *proc.ExitError
	if !errors.Is(err, proc.ErrLeaseDeadline) || !errors.As(err, &ee) || ee.ExitCode() != 137 {
		t.Fatalf("Run: %v, want ErrLeaseDeadline and exit code 137", err)
	}
}

// A deadline that is never extended kills the job when it passes.
func TestDeadlineKills(t *testing.T) {
	noLeaks(t)
	const ahead = 300 * time.Millisecond
	deadline := time.Now().Add(ahead)
	src := newDeadlineSource(deadline)
	err := proc.Command{Shell: "trap '' TERM; sleep 30", Grace: time.Minute, Deadline: src.get}.
		Run(context.Background(), nil)
	late := time.Since(deadline)
	wantDeadlineKill(t, err)
	if late < 0 || late > 2*time.Second {
		t.Fatalf("Run returned %v after the deadline, want within 2s after it", late)
	}
}

// A deadline extended in time never kills; a zero deadline withdraws it.
func TestDeadlineExtended(t *testing.T) {
	noLeaks(t)
	const ahead, every = 300 * time.Millisecond, 100 * time.Millisecond
	const jobTime = 1500 * time.Millisecond
	src := newDeadlineSource(time.Now().Add(ahead))
	done := make(chan struct{})
	extended := make(chan struct{})
	go func() {
		defer close(extended)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				src.set(time.Now().Add(ahead))
			}
		}
	}()
	start := time.Now()
	err := proc.Command{Shell: fmt.Sprintf("sleep %g", jobTime.Seconds()), Deadline: src.get}.
		Run(context.Background(), nil)
	close(done)
	<-extended
	if err != nil {
		t.Fatalf("Run: %v, want nil: the deadline was extended every %v", err, every)
	}
	if elapsed := time.Since(start); elapsed < jobTime {
		t.Fatalf("Run returned after %v, before the job's %v", elapsed, jobTime)
	}

	src = newDeadlineSource(time.Now().Add(ahead))
	src.set(time.Time{})
	if err := (proc.Command{Shell: "sleep 1", Deadline: src.get}).Run(context.Background(), nil); err != nil {
		t.Fatalf("Run: %v, want nil: the deadline was withdrawn", err)
	}
}

// The shim and its job frozen together past the deadline: the job dies as
// soon as they are thawed.
func TestDeadlineFrozenShim(t *testing.T) {
	noLeaks(t)
	const ahead = 2 * time.Second // time to start the job and freeze it
	pidfile := filepath.Join(t.TempDir(), "pids")
	deadline := time.Now().Add(ahead)
	src := newDeadlineSource(deadline)
	var runErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		runErr = proc.Command{
			Shell: `echo "$PPID $$" > "$PIDFILE.tmp" && mv "$PIDFILE.tmp" "$PIDFILE"; sleep 30`,
			Env:   map[string]string{"PIDFILE": pidfile},
			// Reached only if the deadline is not enforced.
			Deadline: src.get,
		}.Run(context.Background(), nil)
	}()
	pids := awaitPids(t, pidfile, 2, done) // shim, sh
	shimPid, shPid := pids[0], pids[1]
	// One group, led by the shim, holds the shim and the whole job.
	pgid, err := syscall.Getpgid(shPid)
	if err != nil || pgid != shimPid {
		t.Fatalf("job's process group %d (%v), want the shim's pid %d", pgid, err, shimPid)
	}
	if err := syscall.Kill(-pgid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			_ = syscall.Kill(-pgid, syscall.SIGCONT)
		}
	}
	defer func() { thaw(); <-done }()
	for _, pid := range pids {
		awaitState(t, pid, 'T')
	}
	if time.Now().After(deadline) {
		t.Fatalf("the deadline passed before the group was frozen; raise ahead (%v)", ahead)
	}
	// Frozen past the deadline: nobody acts.
	time.Sleep(time.Until(deadline) + 200*time.Millisecond)
	for _, pid := range pids {
		if dead(pid) {
			t.Fatalf("pid %d died while frozen", pid)
		}
	}
	thawedAt := time.Now()
	thaw()
	awaitDeath(t, pids)
	if took := time.Since(thawedAt); took > time.Second {
		t.Errorf("the job died %v after it was thawed, want at once", took)
	}
	<-done
	wantDeadlineKill(t, runErr)
}

// awaitState waits up to deathTimeout for pid to be in state (as in
// /proc/PID/stat, e.g. 'T' for stopped).
func awaitState(t *testing.T, pid int, state byte) {
	t.Helper()
	deadline := time.Now().Add(deathTimeout)
	for {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatal(err)
		}
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == state {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d not in state %c after %v: %s", pid, state, deathTimeout, stat)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
