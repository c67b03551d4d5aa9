package main

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/cronlock/cronlock/internal/natstest"
)

// What TestReconnectAfterOutage asserts, from NATS being back: the target
// is 2 s for both, the bounds are generous for a loaded test machine. The
// reconnect took up to 5 s (3.4 s measured) with the former 5 s backoff
// cap. The lease (5 s) is longer than the catch-up bound on purpose: a lock
// write of this replica sent while NATS was down can land on reconnect,
// and unless the lock frees it, it holds the key until its TTL (3 of 8
// runs failed so before the lock kept looking for such writes).
const (
	reconnectBound = 3 * time.Second
	catchUpBound   = 3 * time.Second
)

// TestReconnectAfterOutage: NATS (a real server on a fixed port and store)
// stops for 8 s, long enough for the reconnect backoff to reach its cap,
// and comes back 1.5 s after a tick of an every-5-s job with a starting
// deadline. The daemon reconnects within reconnectBound of NATS being back
// (ready for clients) and runs that latest missed tick within catchUpBound
// (target 2 s for both; the figures are logged). Debug logs are kept for a
// failure's report.
func TestReconnectAfterOutage(t *testing.T) {
	t.Parallel()
	port, store := reservePort(t), t.TempDir()
	runServer := func() *server.Server {
		return natstest.RunServer(t, natstest.Options{Configure: func(o *server.Options) {
			o.Port, o.StoreDir = port, store
		}})
	}
	srv := runServer()
	dir := t.TempDir()
	out := filepath.Join(dir, "runs")
	cfg := writeFile(t, dir, "cronlock.yaml", fmt.Sprintf(`
nats: {url: "nats://127.0.0.1:%d"}
lock: {lease: 5s, renew: 1s}
http: {listen: ""}
log: {level: debug}
jobs:
  - name: every.five
    schedule: "*/5 * * * * *"
    starting_deadline: 10s
    shell: echo "$CRONLOCK_TICK $(date +%%s.%%N)" >> %q
`, port, out))
	d := startDaemon(t, dir, cfg)
	running(d)
	waitFor(t, 10*time.Second, "a first run", func() bool { return len(fileLines(t, out)) > 0 })

	// Stop at least 8 s before a tick + 1.5 s, restart then: that tick is
	// the latest missed one, the next is 3.5 s away.
	const period = 5 * time.Second
	missed := time.Now().Add(8 * time.Second).Truncate(period).Add(period)
	stop := missed.Add(1500 * time.Millisecond).Add(-8 * time.Second)
	time.Sleep(time.Until(stop))
	srv.Shutdown()
	srv.WaitForShutdown()
	d.waitOutput("disconnected from NATS", 5*time.Second)
	reconnects := strings.Count(d.out.String(), "reconnected to NATS")
	time.Sleep(time.Until(missed.Add(1500 * time.Millisecond)))
	starting := time.Now()
	runServer()
	back := time.Now()
	t.Logf("server start took %v", back.Sub(starting).Round(time.Millisecond))

	waitFor(t, 2*reconnectBound, "the reconnect", func() bool {
		return strings.Count(d.out.String(), "reconnected to NATS") > reconnects
	})
	reconnect := time.Since(back)
	var started time.Time
	waitFor(t, 2*catchUpBound, "the run of the missed tick", func() bool {
		started = runStart(t, out, missed)
		return !started.IsZero()
	})
	catchUp := started.Sub(back)
	t.Logf("NATS back → reconnected %v (seen by the test), missed tick %s run %v after",
		reconnect.Round(time.Millisecond), missed.Format("15:04:05"), catchUp.Round(time.Millisecond))
	if reconnect > reconnectBound {
		t.Errorf("reconnected %v after NATS was back, want within %v (target 2s)", reconnect, reconnectBound)
	}
	if catchUp > catchUpBound {
		t.Errorf("the missed tick ran %v after NATS was back, want within %v (target 2s)", catchUp, catchUpBound)
	}
}

// runStart is when the run of tick started, from the lines "TICK UNIXTIME"
// the job appends to out, or zero if it has not run.
func runStart(t *testing.T, out string, tick time.Time) time.Time {
	for _, line := range fileLines(t, out) {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, f[0])
		if err != nil || !at.Equal(tick) {
			continue
		}
		secs, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			t.Fatalf("bad run line %q: %v", line, err)
		}
		return time.Unix(0, int64(secs*float64(time.Second)))
	}
	return time.Time{}
}
