package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"time"
)

const (
	// maxCommandOutput bounds how much of a failed command's output (the
	// tail of stdout and stderr) goes into the log.
	maxCommandOutput = 1024
	// commandWaitDelay bounds the wait for the command's output pipes after
	// it exited or was killed, in case a child it started keeps them open.
	commandWaitDelay = time.Second
)

// command runs a program with the payload on its standard input.
type command struct {
	argv []string
	dir  string // working directory; "": cronlock's
}

func newCommand(argv []string, dir string) *command {
	return &command{argv: append([]string(nil), argv...), dir: dir}
}

func (c *command) String() string { return "command " + strconv.Quote(c.argv[0]) }

// send runs the command once, in its dir (else cronlock's working
// directory), with cronlock's environment plus CRONLOCK_EVENT and
// CRONLOCK_JOB. Exit status 0 is success.
// When ctx ends first the command's process group is killed. A program that
// cannot be found or executed is not retried.
func (c *command) send(ctx context.Context, d delivery) (retry bool, err error) {
	cmd := exec.CommandContext(ctx, c.argv[0], c.argv[1:]...)
	cmd.Dir = c.dir
	cmd.Stdin = bytes.NewReader(d.body)
	out := &tail{max: maxCommandOutput}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), "CRONLOCK_EVENT="+d.event, "CRONLOCK_JOB="+d.job)
	cmd.WaitDelay = commandWaitDelay
	setProcessGroup(cmd)
	err = cmd.Run()
	if err == nil {
		return false, nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return true, fmt.Errorf("%v, output %q", ee, bytes.TrimSpace(out.buf))
	}
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		return false, err
	}
	return true, err
}

// tail is an io.Writer that keeps the last max bytes written to it.
type tail struct {
	buf []byte
	max int
}

func (t *tail) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}
