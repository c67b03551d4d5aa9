package proc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/job"
)

// Defaults applied when the corresponding Command field is zero.
const (
	DefaultGrace   = 10 * time.Second
	DefaultMaxLine = 16 << 10
)

// Command describes one external job command. The zero value is not runnable:
// exactly one of Argv and Shell must be set. The command's stdin is /dev/null
// unless Stdin is set.
type Command struct {
	// Argv is executed directly; Argv[0] is looked up in the job's PATH
	// unless it contains a slash (then it is relative to Dir).
	Argv []string
	// Shell is run as /bin/sh -c Shell.
	Shell string
	// Env is added on top of cronlock's own environment. The extraEnv
	// passed to Run overrides it.
	Env map[string]string
	// Dir is the working directory; "" means cronlock's.
	Dir string
	// Stdin, if not nil, is the command's standard input, whole (it is
	// handed over as an in-memory file, so that no goroutine feeds it and
	// a command that does not read it cannot hold Run up).
	Stdin []byte
	// Grace is how long the job may take to exit after SIGTERM before the
	// group gets SIGKILL; 0 means DefaultGrace and a negative value is an
	// error. A StopCause can shorten it for one stop. It also bounds how
	// long leftovers of a finished job and escaped holders of its output
	// are waited for (see the package documentation).
	Grace time.Duration
	// NoGrace sends SIGKILL right after SIGTERM, both when stopping the
	// job and to leftovers of a finished one; Grace is then ignored. It is
	// a separate field because Grace's zero value means DefaultGrace.
	// Output is still read for at least minOutputWait after the job ended.
	NoGrace bool
	// MaxLine is the longest logged output line in bytes; longer lines are
	// cut (at a UTF-8 boundary where possible), the rest of the line is
	// discarded and the entry carries truncated=true. 0 means
	// DefaultMaxLine. Memory used per stream is bounded by about MaxLine.
	MaxLine int
	// LogLinesPerSecond and LogBytesPerSecond are the run's log budget:
	// at most that many output lines, and about that many bytes (one
	// line more at most), are logged per second, both streams together.
	// Lines over the budget are not logged; a line "[... N lines not
	// logged]" (at warn, field lines_not_logged) reports them before the
	// next line logged (within the budget), or when the run ends (one line
	// on top of it). Tail still gets every byte.
	// 0 means DefaultLogLinesPerSecond and DefaultLogBytesPerSecond; a
	// negative value is an error.
	LogLinesPerSecond int
	LogBytesPerSecond int
	// Logger receives each stdout line at info level and each stderr line
	// at warn level, with field "stream" ("stdout" or "stderr"). Both
	// streams are logged concurrently, so its writer must be safe for
	// concurrent use (see zerolog.SyncWriter). The zero value discards.
	Logger zerolog.Logger
	// Tail, if not nil, receives all of the job's stdout and stderr bytes,
	// not cut at MaxLine, as Run reads them: the two streams interleaved
	// in the order Run reads them, whole lines at a time where lines fit
	// in MaxLine. nil keeps nothing.
	Tail *Tail
	// Output, if not nil, receives the same bytes as Tail, in the same
	// pieces, from the goroutines that read the job's output (both
	// streams, concurrently): its Write must be safe for concurrent use
	// and must not block, as the job stalls while its output is not read.
	// Its errors are ignored. nil: none.
	Output io.Writer
	// Deadline, if not nil, is the run's lease deadline: Run passes each
	// deadline it reports to the shim, which SIGKILLs the group on its own
	// once CLOCK_MONOTONIC passes the latest one, even while cronlock is
	// frozen; Run then returns an error wrapping ErrLeaseDeadline and an
	// *ExitError for SIGKILL. A zero deadline means none (any earlier one
	// is withdrawn). nil: no deadline.
	Deadline job.DeadlineFunc
}

// ErrLeaseDeadline is wrapped by Run's error when the shim killed the job
// because the lease deadline passed without an extension.
var ErrLeaseDeadline = errors.New("proc: lease deadline passed")

// ExitError reports a command that ran but did not exit with status 0.
type ExitError struct {
	// Code is the exit status, or -1 if the command was killed by a signal.
	Code int
	// Signal is the signal that killed the command, 0 if it exited.
	Signal syscall.Signal
}

// ExitCode returns the exit status, or 128 plus the signal number for a
// command killed by a signal (the shell's convention; 137 for SIGKILL).
func (e *ExitError) ExitCode() int {
	if e.Signal != 0 {
		return 128 + int(e.Signal)
	}
	return e.Code
}

func (e *ExitError) Error() string {
	if e.Signal != 0 {
		return "proc: command killed by signal " + e.Signal.String()
	}
	return fmt.Sprintf("proc: command exited with status %d", e.Code)
}

// grace is the effective time between SIGTERM and SIGKILL.
func (c Command) grace() time.Duration {
	switch {
	case c.NoGrace:
		return 0
	case c.Grace > 0:
		return c.Grace
	}
	return DefaultGrace
}

// StopCause, as the cause of a Run's cancelled context
// (context.WithCancelCause), stops the command with a shorter grace than
// Command.Grace: for a stop that must be over by a deadline, such as a lost
// lock lease before another replica can take the lock.
type StopCause struct {
	Err   error
	Grace time.Duration
}

func (s *StopCause) Error() string { return s.Err.Error() }
func (s *StopCause) Unwrap() error { return s.Err }

// stopGrace is the grace for stopping a run whose ctx is done.
func stopGrace(ctx context.Context, grace time.Duration) time.Duration {
	var sc *StopCause
	if errors.As(context.Cause(ctx), &sc) && sc.Grace < grace {
		return max(sc.Grace, 0)
	}
	return grace
}

// budget returns the run's log budget, defaults applied.
func (c Command) budget() *budget {
	lines, bytes := c.LogLinesPerSecond, c.LogBytesPerSecond
	if lines == 0 {
		lines = DefaultLogLinesPerSecond
	}
	if bytes == 0 {
		bytes = DefaultLogBytesPerSecond
	}
	return newBudget(lines, bytes)
}

func (c Command) maxLine() int {
	if c.MaxLine > 0 {
		return c.MaxLine
	}
	return DefaultMaxLine
}

// argv returns the argument vector to execute, or an error if the Command is
// not well formed.
func (c Command) argv() ([]string, error) {
	switch {
	case c.Grace < 0:
		return nil, fmt.Errorf("proc: negative Grace %v (set NoGrace for none)", c.Grace)
	case c.LogLinesPerSecond < 0 || c.LogBytesPerSecond < 0:
		return nil, fmt.Errorf("proc: negative log budget (%d lines, %d bytes per second)", c.LogLinesPerSecond, c.LogBytesPerSecond)
	case len(c.Argv) > 0 && c.Shell != "":
		return nil, errors.New("proc: both Argv and Shell are set")
	case len(c.Argv) > 0:
		if c.Argv[0] == "" {
			return nil, errors.New("proc: empty Argv[0]")
		}
		return c.Argv, nil
	case c.Shell != "":
		return []string{"/bin/sh", "-c", c.Shell}, nil
	default:
		return nil, errors.New("proc: neither Argv nor Shell is set")
	}
}

// environ returns cronlock's environment, then Env (in key order), then
// extraEnv. Later entries win (os/exec keeps the last value of a key).
func (c Command) environ(extraEnv []string) ([]string, error) {
	env := os.Environ()
	keys := make([]string, 0, len(c.Env))
	for k := range c.Env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, fmt.Errorf("proc: invalid environment variable name %q", k)
		}
		env = append(env, k+"="+c.Env[k])
	}
	for _, kv := range extraEnv {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return nil, fmt.Errorf("proc: invalid environment entry %q, want KEY=VALUE", kv)
		}
		env = append(env, kv)
	}
	return env, nil
}

// sink is what receives every byte of the output: Tail, and Output if set.
func (c Command) sink() io.Writer {
	if c.Output == nil {
		return c.Tail
	}
	return teeWriter{c.Tail, c.Output}
}

// teeWriter writes to both writers, ignoring their errors (neither
// writer's failure may stop the job's output from being read).
type teeWriter struct{ a, b io.Writer }

func (t teeWriter) Write(p []byte) (int, error) {
	_, _ = t.a.Write(p)
	_, _ = t.b.Write(p)
	return len(p), nil
}

// pump logs r line by line within the budget b, and copies it to tail,
// until r fails or reaches EOF. A line longer than
// maxLine is logged cut, with truncated=true, and the rest of it up to the
// next newline is read and dropped, so memory stays bounded by the reader's
// buffer of maxLine+2 bytes (room for "\r\n") whatever the job writes. A trailing "\n" or
// "\r\n" is not logged; a final line without newline is.
func pump(r io.Reader, log *zerolog.Logger, level zerolog.Level, stream string, maxLine int, tail io.Writer, b *budget) {
	br := bufio.NewReaderSize(r, maxLine+2)
	discarding := false // inside the dropped rest of a cut line
	for {
		line, err := br.ReadSlice('\n')
		_, _ = tail.Write(line)
		switch {
		case err == bufio.ErrBufferFull:
			if !discarding {
				emit(log, level, stream, line, maxLine, b)
				discarding = true
			}
			continue
		case len(line) == 0:
		case discarding:
			// The end (or, at EOF, the last piece) of a cut line.
			discarding = false
		default:
			line = line[:len(line)-len(eol(line))]
			emit(log, level, stream, line, maxLine, b)
		}
		if err != nil {
			return
		}
	}
}

// eol returns the line terminator at the end of line: "\r\n", "\n" or "".
func eol(line []byte) string {
	switch {
	case len(line) >= 2 && line[len(line)-2] == '\r' && line[len(line)-1] == '\n':
		return "\r\n"
	case len(line) >= 1 && line[len(line)-1] == '\n':
		return "\n"
	}
	return ""
}

// emit logs line, cut to maxLine bytes if longer, if the budget b allows.
func emit(log *zerolog.Logger, level zerolog.Level, stream string, line []byte, maxLine int, b *budget) {
	truncated := len(line) > maxLine
	if truncated {
		line = line[:cutPoint(line, maxLine)]
	}
	ok, dropped := b.take(time.Now(), len(line))
	logDropped(log, dropped)
	if !ok {
		return
	}
	ev := log.WithLevel(level).Str("stream", stream)
	if truncated {
		ev = ev.Bool("truncated", true)
	}
	ev.Msg(string(line))
}

// cutPoint returns where to cut b (len(b) > n) to keep at most n bytes without
// splitting a UTF-8 sequence; for bytes that are not UTF-8 it returns n.
func cutPoint(b []byte, n int) int {
	for i := n; i > 0 && i > n-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			return i
		}
	}
	return n
}
