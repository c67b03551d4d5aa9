package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// exhaustConns is how many idle keep-alive connections the test opens:
// more than the daemon's 256 descriptors.
const exhaustConns = 300

// exhaustTimeout is the test daemon's http.idle_timeout and read_timeout.
const exhaustTimeout = 2 * time.Second

// closeMargin is how much later than its timeout the server may close a
// connection on a loaded machine.
const closeMargin = 4 * time.Second

// keepAlive is a client connection that has had one response and waits,
// idle, for the server to close it.
type keepAlive struct {
	conn net.Conn
	r    *bufio.Reader
}

// openIdle connects to addr, asks for /healthz and reads the answer,
// leaving the connection open (HTTP/1.1 keep-alive). It returns nil when
// the server closed it first (evicted for a newer one).
func openIdle(t *testing.T, addr string) *keepAlive {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", addr); err != nil {
		c.Close()
		return nil
	}
	r := bufio.NewReader(c)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		c.Close()
		return nil
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	c.SetDeadline(time.Time{})
	return &keepAlive{conn: c, r: r}
}

// slowBody starts a request whose body trickles in a byte every 200 ms and
// returns a channel closed when the server has closed the connection.
func slowBody(t *testing.T, addr string) <-chan struct{} {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST /api/jobs/tick/trigger HTTP/1.1\r\nHost: %s\r\nContent-Length: 100000\r\n\r\n", addr)
	go func() {
		for {
			time.Sleep(200 * time.Millisecond)
			if _, err := c.Write([]byte("x")); err != nil {
				return
			}
		}
	}()
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		io.Copy(io.Discard, c) // a 404 may come first; EOF when the server hangs up
	}()
	return closed
}

// TestHTTPListenerCannotBeExhausted is issue 19 §1: a daemon limited to 256
// file descriptors, 300 idle keep-alive connections and a request whose
// body never ends. Jobs keep running, /healthz answers, and the server
// closes the idle connections within http.idle_timeout and the slow request
// within http.read_timeout.
func TestHTTPListenerCannotBeExhausted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "runs")
	cfg := writeFile(t, dir, "cronlock.yaml", fmt.Sprintf(`
lock: {lease: 2s, renew: 500ms}
http: {listen: "127.0.0.1:0", idle_timeout: %s, read_timeout: %s}
config_watch: false
jobs:
  - name: tick
    schedule: "* * * * * *"
    shell: echo ran >> %q
`, exhaustTimeout, exhaustTimeout, out))
	d := startDaemonCmd(t, dir, exec.Command("sh", "-c", `ulimit -n 256 && exec "$0" run -c "$1"`, binary(t), cfg))
	start := time.Now()
	addr := strings.TrimPrefix(httpBase(t, d), "http://")
	waitFor(t, 30*time.Second, "the first run", func() bool { return len(fileLines(t, out)) > 0 })
	if !strings.Contains(d.out.String(), `"max_connections":128`) {
		t.Errorf("want a connection limit of 128 (half of 256 descriptors) in the log:\n%s", d.out)
	}

	var held []*keepAlive
	for range exhaustConns {
		if k := openIdle(t, addr); k != nil {
			held = append(held, k)
		}
	}
	idleSince := time.Now()
	defer func() {
		for _, k := range held {
			k.conn.Close()
		}
	}()
	slowStart := time.Now()
	slowClosed := slowBody(t, addr)

	// Jobs keep running and /healthz answers, on new connections.
	before := len(fileLines(t, out))
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	waitFor(t, 10*time.Second, "two more runs during the attack", func() bool {
		resp, err := client.Get("http://" + addr + "/healthz")
		if err != nil {
			t.Fatalf("/healthz during the attack: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("/healthz during the attack: %s", resp.Status)
		}
		return len(fileLines(t, out)) >= before+2
	})

	select {
	case <-slowClosed:
		t.Logf("the slow-body request was closed %v after it started", time.Since(slowStart).Round(10*time.Millisecond))
	case <-time.After(exhaustTimeout + closeMargin):
		t.Errorf("a request with a slow body was not closed within read_timeout (%v) + %v", exhaustTimeout, closeMargin)
	}
	deadline := idleSince.Add(exhaustTimeout + closeMargin)
	open := 0
	for _, k := range held {
		k.conn.SetReadDeadline(deadline)
		if _, err := k.r.ReadByte(); errors.Is(err, os.ErrDeadlineExceeded) {
			open++
		}
	}
	t.Logf("every idle connection closed %v after the last one went idle", time.Since(idleSince).Round(10*time.Millisecond))
	if open > 0 {
		t.Errorf("%d of %d idle connections still open %v after their last response (idle_timeout %v)",
			open, len(held), exhaustTimeout+closeMargin, exhaustTimeout)
	}
	if logs := d.out.String(); strings.Contains(logs, "too many open files") {
		t.Errorf("the daemon ran out of file descriptors:\n%s", logs)
	}
	t.Logf("%v from start to the end of the checks", time.Since(start).Round(time.Millisecond))
	t.Logf("%d of %d connections had their answer and went idle; the server closed them all (evicted at the limit of 128, or idle_timeout)",
		len(held), exhaustConns)
}
