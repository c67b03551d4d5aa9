//go:build linux

package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

const (
	// shimEnv marks a process started by Run as the shim. Init removes it
	// from the environment before the job is started.
	shimEnv = "CRONLOCK_PROC_SHIM"
	// shimName is the shim's argv[0], so that ps shows what it is.
	shimName = "cronlock-proc-shim"
	// linkFD is the shim's end of the lifeline/status socket.
	linkFD = 3
	// maxStatus bounds the status line the shim sends.
	maxStatus = 1024
)

// initialized records that Init ran, so that Run never re-executes a binary
// that would not recognise itself as the shim (and would start a second
// cronlock instead).
var initialized atomic.Bool

// Init must be called first thing in main, and in TestMain of packages whose
// tests call Run. In a process started by Run as the shim it supervises the
// job and exits with the job's status; otherwise it returns immediately.
func Init() {
	initialized.Store(true)
	if v, ok := os.LookupEnv(shimEnv); !ok || v != "1" {
		return
	}
	_ = os.Unsetenv(shimEnv)
	// syscall.Exit, not os.Exit: the shim has nothing to flush, and
	// os.Exit's exit hooks make a race-enabled build sleep for a second
	// (GORACE atexit_sleep_ms) after every successful job.
	syscall.Exit(shim(os.Args))
}

// Run starts the command with extraEnv (KEY=VALUE entries, overriding Env)
// added to its environment and waits for it. It returns nil on exit status 0
// and an *ExitError if the command exited non-zero or was killed by a signal.
// Other errors mean the command was invalid or could not be started.
//
// When ctx is done Run sends SIGTERM (and SIGCONT, for stopped members) to
// the whole process group, then SIGKILL after Grace, waits for the group and
// returns an error that wraps ctx.Err(), context.Cause(ctx) and the
// *ExitError if any, unless the command had already exited by itself.
//
// Run returns only after the command and everything left in its process
// group have exited, the supervisor has been reaped and both output streams
// have been drained (or given up on, see the package documentation). It
// leaves no goroutine behind. Run is safe for concurrent use.
func (c Command) Run(ctx context.Context, extraEnv []string) error {
	if !initialized.Load() {
		return errors.New("proc: Init was not called at the start of main")
	}
	argv, err := c.argv()
	if err != nil {
		return err
	}
	env, err := c.environ(extraEnv)
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		return fmt.Errorf("proc: not started: %w", ctxError(ctx))
	}
	grace := c.grace()

	// The lifeline. Both ends are close-on-exec: the shim gets its end as
	// fd 3 through ExtraFiles, and no other child of cronlock inherits
	// ours, so the shim sees EOF exactly when cronlock is gone.
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("proc: lifeline: %w", err)
	}
	ours := fds[0]
	// Closed only on return, after the shim has been reaped.
	defer syscall.Close(ours)
	// Non-blocking for readStatus; the flag is not shared with the shim's
	// end, which is a separate open file description.
	if err := syscall.SetNonblock(ours, true); err != nil {
		syscall.Close(fds[1])
		return fmt.Errorf("proc: lifeline: %w", err)
	}
	theirs := os.NewFile(uintptr(fds[1]), "lifeline")
	defer theirs.Close()

	outR, outW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("proc: stdout pipe: %w", err)
	}
	defer outR.Close()
	defer outW.Close()
	errR, errW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("proc: stderr pipe: %w", err)
	}
	defer errR.Close()
	defer errW.Close()

	cmd := &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       append([]string{shimName, grace.String()}, argv...),
		Env:        append(env, shimEnv+"=1"),
		Dir:        c.Dir,
		Stdout:     outW,
		Stderr:     errW,
		ExtraFiles: []*os.File{theirs},
		// The shim leads a new process group: its pid is the group id.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	err = cmd.Start()
	// The shim (and the job) have their own copies now. Without ours,
	// the output pipes reach EOF when the group is gone.
	theirs.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		return fmt.Errorf("proc: start: %w", err)
	}
	maxLine := c.maxLine()
	var pumps sync.WaitGroup
	pumps.Add(2)
	go func() {
		defer pumps.Done()
		pump(outR, &c.Logger, zerolog.InfoLevel, "stdout", maxLine)
	}()
	go func() {
		defer pumps.Done()
		pump(errR, &c.Logger, zerolog.WarnLevel, "stderr", maxLine)
	}()

	pgid := cmd.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- waitNoReap(pgid) }()

	stopped := false
	var waitErr error
	select {
	case waitErr = <-exited:
	case <-ctx.Done():
		select {
		case waitErr = <-exited:
			// Exited by itself; report that, not ctx.
		default:
			stopped = true
			terminate(pgid)
			timer := time.NewTimer(stopGrace(ctx, grace))
			select {
			case waitErr = <-exited:
			case <-timer.C:
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
				waitErr = <-exited
			}
			timer.Stop()
		}
	}
	if waitErr == nil {
		// Backstop for a shim that died before its job (killed alone,
		// or crashed). The shim is a zombie until cmd.Wait, so its pid,
		// which is the group id, cannot have been reused yet.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	werr := cmd.Wait()
	status := readStatus(ours)

	drained := make(chan struct{})
	go func() {
		pumps.Wait()
		close(drained)
	}()
	timer := time.NewTimer(grace)
	select {
	case <-drained:
	case <-timer.C:
		// A process that left the group holds the output open.
		outR.Close()
		errR.Close()
		<-drained
		c.Logger.Warn().Msg("proc: command output still open after it exited; stopped reading")
	}
	timer.Stop()

	res := result(status, cmd.ProcessState, werr, argv[0])
	if !stopped {
		return res
	}
	if res == nil {
		return fmt.Errorf("proc: command stopped: %w", ctxError(ctx))
	}
	return fmt.Errorf("proc: command stopped: %w: %w", ctxError(ctx), res)
}

// terminate asks process group pgid to exit: SIGTERM, then SIGCONT so that
// stopped members act on it too (as systemd does).
func terminate(pgid int) {
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	_ = syscall.Kill(-pgid, syscall.SIGCONT)
}

// ctxError returns ctx.Err(), joined with context.Cause(ctx) if that differs,
// so that errors.Is finds both.
func ctxError(ctx context.Context) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	if cause == nil || cause == err {
		return err
	}
	return fmt.Errorf("%w: %w", err, cause)
}

// waitNoReap blocks until process pid has exited without reaping it, so that
// its pid stays allocated until cmd.Wait.
func waitNoReap(pid int) error {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != syscall.EINTR {
			return err
		}
	}
}

// readStatus returns the first line the shim wrote on the lifeline, or "".
// It is called after the shim has been reaped: whatever it wrote is already
// queued, so fd is read without blocking.
func readStatus(fd int) string {
	buf := make([]byte, maxStatus)
	n := 0
	for n < len(buf) {
		m, err := syscall.Read(fd, buf[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil || m <= 0 {
			break
		}
		n += m
	}
	line, _, _ := strings.Cut(string(buf[:n]), "\n")
	return line
}

// result turns the shim's status line, or failing that its wait status,
// into Run's result.
func result(status string, ps *os.ProcessState, werr error, name string) error {
	verb, arg, _ := strings.Cut(status, " ")
	switch verb {
	case "exit":
		if n, err := strconv.Atoi(arg); err == nil {
			if n == 0 {
				return nil
			}
			return &ExitError{Code: n}
		}
	case "signal":
		if n, err := strconv.Atoi(arg); err == nil {
			return &ExitError{Code: -1, Signal: syscall.Signal(n)}
		}
	case "error":
		return fmt.Errorf("proc: start %s: %s", name, arg)
	}
	// No (valid) status line: the shim did not get as far as reporting,
	// typically because the group was SIGKILLed.
	if ps == nil {
		return fmt.Errorf("proc: wait: %w", werr)
	}
	ws, ok := ps.Sys().(syscall.WaitStatus)
	switch {
	case !ok:
		return fmt.Errorf("proc: supervisor ended: %v", ps)
	case ws.Signaled():
		return &ExitError{Code: -1, Signal: ws.Signal()}
	case ws.ExitStatus() != 0:
		return &ExitError{Code: ws.ExitStatus()}
	}
	return errors.New("proc: supervisor exited without reporting a status")
}

// shim is the supervisor's main. args are [shimName, grace, argv...]. It
// returns the exit code (see the package documentation); it may instead die
// from the SIGKILL it sends to its own group.
func shim(args []string) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "cronlock: proc shim: "+format+"\n", a...)
		return 127
	}
	if len(args) < 3 {
		return fail("bad arguments %q", args)
	}
	grace, err := time.ParseDuration(args[1])
	if err != nil {
		return fail("bad grace %q", args[1])
	}
	argv := args[2:]
	pgid := syscall.Getpid()
	if syscall.Getpgrp() != pgid {
		// Killing "our" group would hit whoever started us.
		return fail("not a process group leader; only proc.Run may start the shim")
	}
	// The job must not inherit the lifeline.
	if _, err := unix.FcntlInt(linkFD, unix.F_SETFD, unix.FD_CLOEXEC); err != nil {
		return fail("no lifeline on fd %d: %v", linkFD, err)
	}
	link := os.NewFile(linkFD, "lifeline")

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

	// Orphaned descendants are re-parented to us instead of init, so that
	// we can tell when all of them are gone (ECHILD) and reap them.
	subreaper := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == nil

	go func() {
		buf := make([]byte, 16)
		for {
			if _, err := link.Read(buf); err != nil {
				// EOF: cronlock is gone. Any other error: we can
				// no longer tell, so fail safe the same way.
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
				os.Exit(128 + int(syscall.SIGKILL))
			}
		}
	}()

	report := func(line string) {
		if len(line) > maxStatus-1 {
			line = line[:maxStatus-1]
		}
		// cronlock may be gone (EPIPE); nothing to report to then.
		_, _ = link.Write([]byte(line + "\n"))
	}

	path, err := exec.LookPath(argv[0])
	if err != nil {
		report("error " + err.Error())
		return 127
	}
	child, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
		// No Setpgid: the job stays in the shim's group.
	})
	if err != nil {
		report("error " + (&os.PathError{Op: "exec", Path: path, Err: err}).Error())
		return 127
	}

	ws, err := waitChild(child)
	if err != nil {
		report("error wait: " + err.Error())
		return 127
	}
	code := ws.ExitStatus()
	if ws.Signaled() {
		code = 128 + int(ws.Signal())
		report("signal " + strconv.Itoa(int(ws.Signal())))
	} else {
		report("exit " + strconv.Itoa(code))
	}
	stopLeftovers(pgid, grace, subreaper)
	return code
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
