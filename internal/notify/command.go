package notify

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cronlock/cronlock/internal/proc"
)

// maxCommandOutput bounds how much of a failed command's output (the tail of
// stdout and stderr) goes into the log.
const maxCommandOutput = 1024

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
// CRONLOCK_JOB. Exit status 0 is success. A program that cannot be found or
// executed is not retried.
//
// It runs under internal/proc like a job: in a process group of its own
// under proc's supervisor, so that it and its children die with cronlock,
// even by SIGKILL, and are killed at once (no grace) when ctx ends first.
func (c *command) send(ctx context.Context, d delivery) (retry bool, err error) {
	if err := findProgram(c.argv[0], c.dir); err != nil {
		return false, err
	}
	out := proc.NewTail(maxCommandOutput)
	err = proc.Command{
		Argv:    c.argv,
		Dir:     c.dir,
		Stdin:   d.body,
		NoGrace: true,
		Tail:    out,
	}.Run(ctx, []string{"CRONLOCK_EVENT=" + d.event, "CRONLOCK_JOB=" + d.job})
	if err == nil {
		return false, nil
	}
	var ee *proc.ExitError
	if errors.As(err, &ee) && ctx.Err() == nil {
		return true, fmt.Errorf("%s, output %q", exitText(ee), strings.TrimSpace(out.String()))
	}
	return true, err
}

// exitText says how a command ended, in os/exec's words ("exit status 3",
// "signal: killed").
func exitText(ee *proc.ExitError) string {
	if ee.Signal != 0 {
		return "signal: " + ee.Signal.String()
	}
	return "exit status " + strconv.Itoa(ee.Code)
}

// findProgram checks that name can be executed, as proc's supervisor will
// look it up: in PATH unless it holds a slash, then relative to dir. Its
// error wraps exec.ErrNotFound, fs.ErrNotExist or fs.ErrPermission, which
// retrying does not mend.
func findProgram(name, dir string) error {
	if strings.Contains(name, "/") && !filepath.IsAbs(name) && dir != "" {
		name = filepath.Join(dir, name)
	}
	_, err := exec.LookPath(name)
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		return err
	}
	return nil // anything else: let the run report it
}
