package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
)

// TestReloadOnSIGHUP: SIGHUP applies an added and a removed job without a
// restart; an invalid file is rejected, logged with its file:line, and the
// jobs keep running.
func TestReloadOnSIGHUP(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	dir := t.TempDir()
	out := map[string]string{}
	for _, name := range []string{"kept", "removed", "added"} {
		out[name] = filepath.Join(dir, name)
	}
	job := func(name string) string {
		return fmt.Sprintf("  - name: %s\n    schedule: \"* * * * * *\"\n    shell: date +%%s%%N >> %q\n", name, out[name])
	}
	// config_watch off: the signal alone must reload.
	head := fmt.Sprintf("nats: {url: %s}\nlock: {lease: 2s, renew: 500ms}\nhttp: {listen: \"\"}\nlog: {level: info}\nconfig_watch: false\njobs:\n", url)
	path := filepath.Join(dir, "cronlock.yaml")
	write := func(content string) {
		t.Helper()
		// Write and rename, so that the daemon never reads half a file.
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	count := func(name string) int { return len(fileLines(t, out[name])) }

	write(head + job("kept") + job("removed"))
	d := startDaemon(t, dir, path)
	waitFor(t, 20*time.Second, "both jobs run", func() bool { return count("kept") > 0 && count("removed") > 0 })

	write(head + job("kept") + job("added"))
	d.cmd.Process.Signal(syscall.SIGHUP)
	d.waitOutput(`"added":["added"],"removed":["removed"],"changed":[]`, 10*time.Second)
	waitFor(t, 10*time.Second, "the added job runs", func() bool { return count("added") > 0 })
	removed, added := count("removed"), count("added")
	waitFor(t, 10*time.Second, "two more runs of the added job", func() bool { return count("added") >= added+2 })
	if n := count("removed"); n != removed {
		t.Errorf("the removed job ran %d more time(s) after the reload", n-removed)
	}

	// An invalid file: rejected, the error logged with file:line, the jobs
	// in effect keep running.
	write(head + job("kept") + "  - name: broken\n    schedule: \"0 0 61 * * *\"\n    shell: \"true\"\n")
	d.cmd.Process.Signal(syscall.SIGHUP)
	d.waitOutput("reload rejected", 10*time.Second)
	if s := d.out.String(); !strings.Contains(s, path+":11: jobs[1].schedule") {
		t.Errorf("the rejection does not name %s:11 and the field:\n%s", path, s)
	}
	kept, added := count("kept"), count("added")
	waitFor(t, 10*time.Second, "the jobs keep running", func() bool { return count("kept") >= kept+2 && count("added") >= added+2 })
	if !d.alive() {
		t.Fatal("cronlock run exited")
	}

	// SIGTERM: a clean exit.
	d.stop()
	if d.waitErr != nil {
		t.Errorf("cronlock run after SIGTERM: %v", d.waitErr)
	}
}
