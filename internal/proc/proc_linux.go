//go:build linux

package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/cronlock/cronlock/job"
)

const (
	// shimEnv marks a process started by Run as the shim. Init removes it
	// from the environment before the job is started.
	shimEnv = "CRONLOCK_PROC_SHIM"
	// shimName is the shim's argv[0], so that ps shows what it is.
	shimName = "cronlock-proc-shim"
	// linkFD is the shim's end of the lifeline/status socket.
	linkFD = 3
	// msgDeadline starts the line Run sends the shim with a new deadline.
	msgDeadline = "deadline"
	// statusDeadline is the shim's status line when it killed the group
	// at the lease deadline.
	statusDeadline = "deadline"
	// maxStatus bounds the status line the shim sends.
	maxStatus = 1024
	// minOutputWait is the least time Run keeps reading the job's output
	// after the shim has exited, however short Grace is: the pipes may
	// still hold the job's last lines, which a zero wait would lose.
	minOutputWait = time.Second
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
	argv, env, err := c.prepare(ctx, extraEnv)
	if err != nil {
		return err
	}
	grace := c.grace()
	s, err := startShim(argv, env, c.Dir, grace, c.Stdin)
	if err != nil {
		return err
	}
	defer s.close()
	b := c.budget()
	s.startPumps(&c.Logger, c.maxLine(), c.sink(), b)
	stopDeadlines := s.sendDeadlines(c.Deadline)

	stopped, waitErr := s.waitOrStop(ctx, grace)
	stopDeadlines()
	if waitErr == nil {
		// Backstop for a shim that died before its job (killed alone,
		// or crashed). The shim is a zombie until cmd.Wait, so its pid,
		// which is the group id, cannot have been reused yet.
		_ = syscall.Kill(-s.pgid, syscall.SIGKILL)
	}
	werr := s.cmd.Wait()
	status := s.readStatus()
	s.drain(max(grace, minOutputWait), &c.Logger)
	logDropped(&c.Logger, b.flush())

	res := result(status, s.cmd.ProcessState, werr, argv[0])
	if !stopped {
		return res
	}
	if res == nil {
		return fmt.Errorf("proc: command stopped: %w", ctxError(ctx))
	}
	return fmt.Errorf("proc: command stopped: %w: %w", ctxError(ctx), res)
}

// prepare checks that Init ran, the Command is well formed and ctx is not
// done yet, and returns the argument vector and environment of the job.
func (c Command) prepare(ctx context.Context, extraEnv []string) (argv, env []string, err error) {
	if !initialized.Load() {
		return nil, nil, errors.New("proc: Init was not called at the start of main")
	}
	if argv, err = c.argv(); err != nil {
		return nil, nil, err
	}
	if env, err = c.environ(extraEnv); err != nil {
		return nil, nil, err
	}
	if ctx.Err() != nil {
		return nil, nil, fmt.Errorf("proc: not started: %w", ctxError(ctx))
	}
	return argv, env, nil
}

// shimProc is one started shim, seen from Run.
type shimProc struct {
	cmd  *exec.Cmd
	pgid int // the shim's pid, which is its group's id
	// link is our end of the lifeline, close-on-exec and non-blocking
	// (so pollable: Write waits in the runtime's poller). Closed only by
	// close, after the shim has been reaped.
	link       *os.File
	outR, errR *os.File // read ends of the job's stdout and stderr
	pumps      sync.WaitGroup
	exited     chan error // receives waitNoReap's result once
}

// startShim starts the shim running argv with env in dir, in a new process
// group, with the lifeline as its fd 3 and stdin (nil: /dev/null) as its
// standard input.
func startShim(argv, env []string, dir string, grace time.Duration, stdin []byte) (_ *shimProc, err error) {
	s := &shimProc{exited: make(chan error, 1)}
	var theirs, outW, errW, in *os.File
	defer func() {
		// The shim (and the job) have their own copies now, or none.
		// Without ours, the output pipes reach EOF when the group is
		// gone and the lifeline when the shim is.
		closeFiles(theirs, outW, errW, in)
		if err != nil {
			closeFiles(s.link, s.outR, s.errR)
		}
	}()
	if s.link, theirs, err = lifeline(); err != nil {
		return nil, err
	}
	if s.outR, outW, err = os.Pipe(); err != nil {
		return nil, fmt.Errorf("proc: stdout pipe: %w", err)
	}
	if s.errR, errW, err = os.Pipe(); err != nil {
		return nil, fmt.Errorf("proc: stderr pipe: %w", err)
	}
	if stdin != nil {
		if in, err = memFile(stdin); err != nil {
			return nil, err
		}
	}
	s.cmd = &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       append([]string{shimName, grace.String()}, argv...),
		Env:        append(env, shimEnv+"=1"),
		Dir:        dir,
		Stdout:     outW,
		Stderr:     errW,
		ExtraFiles: []*os.File{theirs},
		// The shim leads a new process group: its pid is the group id.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	if in != nil { // else /dev/null; a nil *os.File would not be nil here
		s.cmd.Stdin = in
	}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("proc: start: %w", err)
	}
	s.pgid = s.cmd.Process.Pid
	go func() { s.exited <- waitNoReap(s.pgid) }()
	return s, nil
}

// lifeline returns the two ends of a new lifeline socket. Both are
// close-on-exec: the shim gets its end as fd 3 through ExtraFiles, and no
// other child of cronlock inherits ours, so the shim sees EOF exactly when
// cronlock is gone. Ours is non-blocking for readStatus; the flag is not
// shared with the shim's end, a separate open file description.
func lifeline() (ours, theirs *os.File, err error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("proc: lifeline: %w", err)
	}
	if err := syscall.SetNonblock(fds[0], true); err != nil {
		syscall.Close(fds[0])
		syscall.Close(fds[1])
		return nil, nil, fmt.Errorf("proc: lifeline: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "lifeline"), os.NewFile(uintptr(fds[1]), "lifeline"), nil
}

// memFile returns an in-memory file holding b, positioned at its start: a
// standard input that needs no goroutine to feed it and never blocks the
// writer, whatever the reader does.
func memFile(b []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate("cronlock-stdin", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("proc: stdin: %w", err)
	}
	f := os.NewFile(uintptr(fd), "stdin")
	if _, err := f.Write(b); err != nil {
		f.Close()
		return nil, fmt.Errorf("proc: stdin: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("proc: stdin: %w", err)
	}
	return f, nil
}

// closeFiles closes those of fs that are not nil.
func closeFiles(fs ...*os.File) {
	for _, f := range fs {
		if f != nil {
			f.Close()
		}
	}
}

// close releases what startShim opened. Call it once the shim is reaped.
func (s *shimProc) close() { closeFiles(s.link, s.outR, s.errR) }

// startPumps starts logging the job's output; drain waits for them.
func (s *shimProc) startPumps(log *zerolog.Logger, maxLine int, tail io.Writer, b *budget) {
	s.pumps.Add(2)
	go func() {
		defer s.pumps.Done()
		pump(s.outR, log, zerolog.InfoLevel, "stdout", maxLine, tail, b)
	}()
	go func() {
		defer s.pumps.Done()
		pump(s.errR, log, zerolog.WarnLevel, "stderr", maxLine, tail, b)
	}()
}

// waitOrStop waits for the shim to exit. If ctx is done first it stops the
// group (SIGTERM, then SIGKILL after the stop grace) and reports stopped.
// waitErr is waitNoReap's error; the shim is not reaped.
func (s *shimProc) waitOrStop(ctx context.Context, grace time.Duration) (stopped bool, waitErr error) {
	select {
	case waitErr = <-s.exited:
		return false, waitErr
	case <-ctx.Done():
	}
	select {
	case waitErr = <-s.exited:
		return false, waitErr // Exited by itself; report that, not ctx.
	default:
	}
	terminate(s.pgid)
	timer := time.NewTimer(stopGrace(ctx, grace))
	defer timer.Stop()
	select {
	case waitErr = <-s.exited:
	case <-timer.C:
		_ = syscall.Kill(-s.pgid, syscall.SIGKILL)
		waitErr = <-s.exited
	}
	return true, waitErr
}

// sendDeadlines starts passing f's deadlines to the shim, as "deadline N"
// lines on the lifeline, where N is the absolute CLOCK_MONOTONIC time in
// nanoseconds (0: none). CLOCK_MONOTONIC is shared by all processes of the
// host and does not jump with the wall clock. The returned stop ends that
// and waits for it; call it once the shim has exited, so that a write the
// shim is not reading fails (EPIPE) instead of blocking.
func (s *shimProc) sendDeadlines(f job.DeadlineFunc) (stop func()) {
	if f == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		last := int64(-1)
		for {
			d, changed := f()
			mono, err := monotonicAt(d)
			if err != nil {
				return // cannot happen on Linux; the runtime relies on the clock
			}
			if mono != last {
				if _, err := fmt.Fprintf(s.link, "%s %d\n", msgDeadline, mono); err != nil {
					return // the shim is gone
				}
				last = mono
			}
			select {
			case <-changed:
			case <-done:
				return
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// monotonicAt converts d to CLOCK_MONOTONIC nanoseconds, 0 for the zero
// time; a time already past converts to at least 1, not to "none".
func monotonicAt(d time.Time) (int64, error) {
	if d.IsZero() {
		return 0, nil
	}
	now, err := monotonicNow()
	return max(now+int64(time.Until(d)), 1), err
}

// monotonicNow reads CLOCK_MONOTONIC in nanoseconds.
func monotonicNow() (int64, error) {
	var ts unix.Timespec
	err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano(), err
}

// drain waits for the pumps to read both streams to EOF, at most wait: then
// a process that left the group holds the output open, and drain stops
// reading.
func (s *shimProc) drain(wait time.Duration, log *zerolog.Logger) {
	drained := make(chan struct{})
	go func() {
		s.pumps.Wait()
		close(drained)
	}()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-drained:
	case <-timer.C:
		s.outR.Close()
		s.errR.Close()
		<-drained
		log.Warn().Msg("proc: command output still open after it exited; stopped reading")
	}
}

// readStatus returns the first line the shim wrote on the lifeline, or "".
// It is called after the shim has been reaped: whatever it wrote is already
// queued, so the socket is read without waiting.
func (s *shimProc) readStatus() string {
	rc, err := s.link.SyscallConn()
	if err != nil {
		return ""
	}
	var line string
	_ = rc.Control(func(fd uintptr) { line = readStatus(int(fd)) })
	return line
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
	case statusDeadline:
		return fmt.Errorf("%w: %w", ErrLeaseDeadline, &ExitError{Code: -1, Signal: syscall.SIGKILL})
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
