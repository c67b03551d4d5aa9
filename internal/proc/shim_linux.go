//go:build linux

package proc

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// shim is the supervisor's main. args are [shimName, grace, argv...]. It
// returns the exit code (see the package documentation); it may instead die
// from the SIGKILL it sends to its own group.
func shim(args []string) int {
	grace, argv, err := shimArgs(args)
	if err != nil {
		return shimFail(err)
	}
	pgid, link, err := shimSetup()
	if err != nil {
		return shimFail(err)
	}
	rep := &reporter{link: link}
	deadlines := make(chan int64)
	go watchLifeline(link, pgid, deadlines)
	go enforceDeadline(deadlines, pgid, rep)

	// Orphaned descendants are re-parented to us instead of init, so that
	// we can tell when all of them are gone (ECHILD) and reap them.
	subreaper := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == nil

	child, err := startJob(argv)
	if err != nil {
		rep.report("error " + err.Error())
		return 127
	}
	ws, err := waitChild(child)
	if err != nil {
		rep.report("error wait: " + err.Error())
		return 127
	}
	code := rep.exit(ws)
	stopLeftovers(pgid, grace, subreaper)
	return code
}

// shimFail reports a shim that cannot do its job on its stderr (the job's,
// which cronlock logs) and returns its exit code.
func shimFail(err error) int {
	fmt.Fprintf(os.Stderr, "cronlock: proc shim: %v\n", err)
	return 127
}

// shimArgs parses the shim's [shimName, grace, argv...].
func shimArgs(args []string) (grace time.Duration, argv []string, err error) {
	if len(args) < 3 {
		return 0, nil, fmt.Errorf("bad arguments %q", args)
	}
	grace, err = time.ParseDuration(args[1])
	if err != nil {
		return 0, nil, fmt.Errorf("bad grace %q", args[1])
	}
	return grace, args[2:], nil
}

// shimSetup checks that the shim leads its process group, takes over the
// lifeline and catches the signals Run sends the group. It returns the
// group's id and the lifeline.
func shimSetup() (pgid int, link *os.File, err error) {
	pgid = syscall.Getpid()
	if syscall.Getpgrp() != pgid {
		// Killing "our" group would hit whoever started us.
		return 0, nil, errors.New("not a process group leader; only proc.Run may start the shim")
	}
	// The job must not inherit the lifeline.
	if _, err := unix.FcntlInt(linkFD, unix.F_SETFD, unix.FD_CLOEXEC); err != nil {
		return 0, nil, fmt.Errorf("no lifeline on fd %d: %v", linkFD, err)
	}
	// Catch, not ignore, the signals the group gets when Run stops the job:
	// the shim must outlive the job to report its status, and caught
	// signals are reset to default in the job by exec. One that cronlock
	// inherited as ignored (nohup) stays ignored, as it would for the job
	// without the shim; Notify would un-ignore it.
	for _, sig := range []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		if !signal.Ignored(sig) {
			signal.Notify(make(chan os.Signal, 1), sig)
		}
	}
	return pgid, os.NewFile(linkFD, "lifeline"), nil
}

// watchLifeline reads the lifeline until it fails, passing each deadline
// Run sends on to deadlines. EOF means cronlock is gone; any other error
// means we can no longer tell, so it fails safe the same way: SIGKILL to
// the whole group, the shim included.
func watchLifeline(link *os.File, pgid int, deadlines chan<- int64) {
	br := bufio.NewReader(link)
	for {
		line, err := br.ReadSlice('\n')
		switch {
		case err == bufio.ErrBufferFull:
			fmt.Fprintf(os.Stderr, "cronlock: proc shim: ignoring an overlong message from cronlock\n")
			continue
		case err != nil:
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			os.Exit(128 + int(syscall.SIGKILL))
		}
		verb, arg, _ := strings.Cut(strings.TrimSuffix(string(line), "\n"), " ")
		d, err := strconv.ParseInt(arg, 10, 64)
		if verb != msgDeadline || err != nil || d < 0 {
			fmt.Fprintf(os.Stderr, "cronlock: proc shim: ignoring bad message %q from cronlock\n", line)
			continue
		}
		deadlines <- d
	}
}

// enforceDeadline keeps the latest deadline (CLOCK_MONOTONIC nanoseconds, 0
// for none) received on deadlines, and once the clock passes it reports
// statusDeadline and SIGKILLs the group, the shim included. It checks the
// clock on every wake-up, including SIGCONT: a shim thawed after the
// deadline acts at once, whatever its timer does.
func enforceDeadline(deadlines <-chan int64, pgid int, rep *reporter) {
	thawed := make(chan os.Signal, 1)
	signal.Notify(thawed, syscall.SIGCONT)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var deadline int64
	for {
		select {
		case deadline = <-deadlines:
		case <-timer.C:
		case <-thawed:
		}
		if deadline == 0 {
			timer.Stop()
			continue
		}
		now, err := monotonicNow()
		if left := time.Duration(deadline - now); err == nil && left > 0 {
			timer.Reset(left)
			continue
		}
		// Past the deadline, or no clock to tell: fail safe.
		rep.report(statusDeadline)
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		return
	}
}

// startJob starts argv in the shim's process group with the shim's stdio
// and environment, and returns its pid.
func startJob(argv []string) (int, error) {
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return 0, err
	}
	child, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
		// No Setpgid: the job stays in the shim's group.
	})
	if err != nil {
		return 0, &os.PathError{Op: "exec", Path: path, Err: err}
	}
	return child, nil
}

// reporter writes the shim's one status line to cronlock; later lines are
// dropped, so that Run sees whichever outcome happened first.
type reporter struct {
	mu   sync.Mutex
	link *os.File
	done bool
}

func (r *reporter) report(line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return
	}
	r.done = true
	if len(line) > maxStatus-1 {
		line = line[:maxStatus-1]
	}
	// cronlock may be gone (EPIPE); nothing to report to then.
	_, _ = r.link.Write([]byte(line + "\n"))
}

// exit reports the job's wait status and returns the shim's exit code for
// it: the job's exit status, or 128+signal.
func (r *reporter) exit(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		r.report("signal " + strconv.Itoa(int(ws.Signal())))
		return 128 + int(ws.Signal())
	}
	r.report("exit " + strconv.Itoa(ws.ExitStatus()))
	return ws.ExitStatus()
}

// waitChild reaps children, including re-parented orphans, until it has
// reaped pid, and returns pid's wait status.
func waitChild(pid int) (syscall.WaitStatus, error) {
	for {
		var ws syscall.WaitStatus
		wpid, err := syscall.Wait4(-1, &ws, 0, nil)
		switch {
		case err == syscall.EINTR:
		case err != nil:
			return 0, err
		case wpid == pid:
			return ws, nil
		}
	}
}

// stopLeftovers ends what the job left behind once its main process is gone:
// SIGTERM to the group, then SIGKILL (which ends the shim too) if descendants
// remain after grace. Without the subreaper it cannot see the leftovers, so
// it sends SIGKILL at once.
func stopLeftovers(pgid int, grace time.Duration, subreaper bool) {
	if !subreaper {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		return
	}
	if !haveChildren() {
		return
	}
	terminate(pgid)
	gone := make(chan struct{})
	go func() {
		for {
			_, err := syscall.Wait4(-1, nil, 0, nil)
			if err != nil && err != syscall.EINTR {
				close(gone) // ECHILD: no descendants left.
				return
			}
		}
	}()
	select {
	case <-gone:
	case <-time.After(grace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
}

// haveChildren reaps exited children and reports whether any remain.
func haveChildren() bool {
	for {
		pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
		switch {
		case err == syscall.EINTR:
		case err != nil:
			return false
		case pid == 0:
			return true
		}
	}
}
