package main

import (
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
)

// TestFrozenRunnerJobStops freezes the cronlock process alone (SIGSTOP, not
// its job's process group) while a command job runs, and checks that the
// job's process dies before the lease could expire on the server: the shim
// kills it at the local safe deadline cronlock sent it after the last
// confirmed renewal, with no help from the frozen cronlock. Then it thaws
// cronlock and checks that SIGTERM still stops it.
func TestFrozenRunnerJobStops(t *testing.T) {
	t.Parallel()
	const lease = 3 * time.Second
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	dir := t.TempDir()
	pidfile := filepath.Join(dir, "pid")
	cfg := writeFile(t, dir, "freeze.yaml", `
nats: {url: `+url+`}
lock: {lease: `+lease.String()+`, renew: 1s, owner: frozen}
http: {listen: ""}
log: {level: debug}
shutdown_grace: 1s
jobs:
  - name: freeze.job
    schedule: "* * * * * *"
    grace: 1s
    env: {PIDFILE: `+strconv.Quote(pidfile)+`}
    shell: '[ -e "$PIDFILE" ] && exit 0; sleep 300 & echo $! > "$PIDFILE.tmp" && mv "$PIDFILE.tmp" "$PIDFILE"; wait'
`)
	d := startDaemon(t, dir, cfg)
	var pid int
	waitFor(t, 60*time.Second, "the job starts", func() bool {
		lines := fileLines(t, pidfile)
		if len(lines) != 1 {
			return false
		}
		var err error
		if pid, err = strconv.Atoi(strings.TrimSpace(lines[0])); err != nil {
			t.Fatalf("pid file %q: %v", lines[0], err)
		}
		return true
	})

	if err := d.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	frozen := time.Now()
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			_ = d.cmd.Process.Signal(syscall.SIGCONT)
		}
	}
	defer thaw() // before startDaemon's cleanup sends SIGTERM
	// The last renewal was at most renew ago and its safe deadline is a
	// tenth of the lease before the server's expiry, so the job must be
	// gone strictly before a lease has passed since the freeze.
	deadline := frozen.Add(lease)
	for !gone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the job (pid %d) still runs %v after cronlock was frozen; its lease (%v) may have expired on the server",
				pid, time.Since(frozen), lease)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("the job died %v after cronlock was frozen", time.Since(frozen))

	thaw()
	d.stop()
	if d.alive() {
		t.Fatal("cronlock did not exit after SIGCONT and SIGTERM")
	}
}
