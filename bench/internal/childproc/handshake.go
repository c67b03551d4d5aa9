package childproc

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// The handshake. The child prints ReadyLine on stdout once it is set up;
// the parent answers on the child's stdin with "GO <start> <end>" (Unix
// nanoseconds), the window all children measure.
const (
	ReadyLine = "READY"
	goWord    = "GO"
)

// AwaitReady waits until by for the child's ReadyLine.
func (p *Proc[R]) AwaitReady(by <-chan time.Time) error {
	return p.Expect(ReadyLine, by)
}

// Begin tells the child the window [start, end).
func (p *Proc[R]) Begin(start, end time.Time) error {
	_, err := fmt.Fprintf(p.Stdin, "%s %d %d\n", goWord, start.UnixNano(), end.UnixNano())
	return err
}

// Handshake is the child's side: it prints ReadyLine on stdout and reads
// the window from in.
func Handshake(in *bufio.Reader, stdout io.Writer) (start, end time.Time, err error) {
	fmt.Fprintln(stdout, ReadyLine)
	line, err := in.ReadString('\n')
	if err != nil {
		return start, end, fmt.Errorf("waiting for %s: %w", goWord, err)
	}
	f := strings.Fields(line)
	if len(f) != 3 || f[0] != goWord {
		return start, end, fmt.Errorf("bad start line %q", line)
	}
	startNs, err1 := strconv.ParseInt(f[1], 10, 64)
	endNs, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil {
		return start, end, fmt.Errorf("bad start line %q", line)
	}
	return time.Unix(0, startNs), time.Unix(0, endNs), nil
}
