// Package childproc drives a benchmark's child process: the benchmark's
// own executable, told by an environment variable what to be, that
// prints a handshake line and, at the end, one JSON report on stdout, and
// its logs on stderr. The parent starts it, waits for the handshake,
// writes its orders on stdin, collects the report, and reaps it.
package childproc

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Proc is a child process whose report is an R.
type Proc[R any] struct {
	Cmd     *exec.Cmd
	Stdin   io.WriteCloser
	Spawned time.Time
	// Report and Err are set by Collect: the report read, and why the
	// child failed (no report, a bad one, or the report's own failure).
	Report *R
	Err    error

	lines chan string    // stdout lines
	reads sync.WaitGroup // stdout and stderr readers, done at EOF
}

// reapTimeout bounds how long Wait lets a child finish its output after
// its stdin is closed, before it kills it.
const reapTimeout = 10 * time.Second

// Start runs exe with env added to the environment. Each stderr line is
// copied to logs after "[tag] ".
func Start[R any](exe string, env []string, tag string, logs io.Writer) (*Proc[R], error) {
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Proc[R]{Cmd: cmd, Stdin: stdin, Spawned: time.Now(), lines: make(chan string, 64)}
	p.reads.Add(2)
	go func() {
		defer p.reads.Done()
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<30) // the report is one long line
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	go func() {
		defer p.reads.Done()
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			fmt.Fprintf(logs, "[%s] %s\n", tag, sc.Text())
		}
	}()
	return p, nil
}

// Expect waits for the stdout line want (surrounding space aside) until by.
func (p *Proc[R]) Expect(want string, by <-chan time.Time) error {
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				return errors.New("exited before " + want)
			}
			if strings.TrimSpace(l) == want {
				return nil
			}
		case <-by:
			return errors.New("timed out waiting for " + want)
		}
	}
}

// Collect waits until by for the report, the first stdout line that
// starts with '{', and sets Report and Err; failure (nil: none) is the
// report's own error, "" when it has none. A child without a report by
// then is killed.
func (p *Proc[R]) Collect(by <-chan time.Time, failure func(*R) string) {
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				p.Err = errors.New("exited without a report")
				return
			}
			if !strings.HasPrefix(l, "{") {
				continue
			}
			var r R
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				p.Err = fmt.Errorf("bad report: %w", err)
				return
			}
			p.Report = &r
			if failure != nil {
				if msg := failure(&r); msg != "" {
					p.Err = errors.New(msg)
				}
			}
			return
		case <-by:
			p.Err = errors.New("no report in time")
			p.Cmd.Process.Kill()
			return
		}
	}
}

// Wait closes the child's stdin (its order to finish) and reaps it once
// its output is read to the end (exec's Wait closes the pipes, so it must
// come after the readers are done), killing it after reapTimeout.
func (p *Proc[R]) Wait() {
	p.Stdin.Close()
	done := make(chan struct{})
	go func() {
		for range p.lines { // drain, so the stdout reader reaches EOF
		}
		p.reads.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(reapTimeout):
		p.Cmd.Process.Kill()
		<-done
	}
	p.Cmd.Wait()
}

// Stop kills the child and reaps it, unless it has been reaped: for a
// benchmark that gives up, so that no child is left behind.
func (p *Proc[R]) Stop() {
	if p.Cmd.ProcessState == nil {
		p.Cmd.Process.Kill()
		p.Wait()
	}
}
