package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/config"
)

// TestPathsRelativeToConfig: a daemon started in one directory with a
// configuration file in another keeps its embedded store (the default
// store_dir), runs a job's relative dir and a notification command's under
// the file's folder; an
// operator command run from a third directory then reads that store and
// shows the runs.
func TestPathsRelativeToConfig(t *testing.T) {
	t.Parallel()
	conf, cwd := t.TempDir(), t.TempDir()
	for _, sub := range []string{"work", "hooks"} {
		if err := os.Mkdir(filepath.Join(conf, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg := writeFile(t, conf, "cronlock.yaml", `
http: {listen: ""}
shutdown_grace: 2s
notify:
  - command: ["sh", "-c", "pwd >> notified"]
    dir: hooks
    on: [success]
jobs:
  - name: where
    schedule: "* * * * * *"
    dir: work
    shell: pwd >> ran
`)
	d := startDaemon(t, cwd, cfg)
	ran, notified := filepath.Join(conf, "work", "ran"), filepath.Join(conf, "hooks", "notified")
	waitFor(t, 30*time.Second, "a run in the job's dir and its notification in the command's, under the file's folder", func() bool {
		return len(fileLines(t, ran)) > 0 && len(fileLines(t, notified)) > 0
	})
	d.stop()
	if got := fileLines(t, notified)[0]; got != filepath.Join(conf, "hooks") {
		t.Errorf("the notification command ran in %s, want %s (dir: hooks, relative to the file's folder)", got, filepath.Join(conf, "hooks"))
	}
	if got := fileLines(t, ran)[0]; got != filepath.Join(conf, "work") {
		t.Errorf("the job ran in %s, want %s (dir: work, relative to the file's folder)", got, filepath.Join(conf, "work"))
	}
	if _, err := os.Stat(filepath.Join(conf, ".cronlock", "nats", "jetstream")); err != nil {
		t.Errorf("no store under the configuration's folder: %v", err)
	}
	if _, err := os.Stat(filepath.Join(cwd, ".cronlock")); err == nil {
		t.Errorf("a store was made under the daemon's working directory %s", cwd)
	}

	// In-process: the test's working directory is the package's.
	r := cronlock(t, nil, "status", "-c", cfg, "where")
	if r.code != 0 || !strings.Contains(r.stdout, "succeeded") || strings.Contains(r.stdout, "never run") {
		t.Errorf("status from another directory: exit %d\nstdout:\n%s\nstderr:\n%s\nwant the runs from the daemon's store",
			r.code, r.stdout, r.stderr)
	}
}

// TestOperatorCommandsWithoutStore: in embedded mode with no store where
// the configuration says, every command that would open it fails (exit 1)
// naming the absolute path it looked at, and leaves no store behind.
func TestOperatorCommandsWithoutStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := writeFile(t, dir, "cronlock.yaml", `
nats: {embedded: {store_dir: state}}
http: {listen: ""}
jobs:
  - {name: hello, schedule: "@daily", shell: echo hello}
`)
	store := filepath.Join(dir, "state")
	for _, args := range [][]string{
		{"status"}, {"status", "hello"}, {"status", "--json"}, {"locks"}, {"replicas"},
		{"suspend", "hello"}, {"resume", "hello"}, {"unlock", "--force", "hello"},
	} {
		r := cronlock(t, nil, append([]string{args[0], "-c", cfg}, args[1:]...)...)
		if r.code != 1 || !strings.Contains(r.stderr, "no cronlock store at "+store) || r.stdout != "" {
			t.Errorf("cronlock %q without a store: exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit 1 naming %s",
				args, r.code, r.stdout, r.stderr, store)
		}
	}
	if _, err := os.Stat(store); err == nil {
		t.Errorf("an operator command created %s", store)
	}
}

// TestRunRefusesPlaceholderAdminToken: `cronlock run` given the admin token
// config.example.yaml once shipped, or another placeholder, does not start:
// exit 2, the error names http.admin_token and the command that makes one.
func TestRunRefusesPlaceholderAdminToken(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	dir := t.TempDir()
	for _, tok := range []string{"replace-with-a-long-random-token", "CHANGE_ME", "your-admin-token-here"} {
		cfg := writeFile(t, dir, "cronlock.yaml", `
http: {listen: "127.0.0.1:0", admin_token: "`+tok+`"}
jobs:
  - {name: hello, schedule: "@daily", shell: echo hello}
`)
		cmd := exec.Command(bin, "run", "-c", cfg)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "http.admin_token") ||
			!strings.Contains(string(out), config.AdminTokenCommand) || strings.Contains(string(out), tok) {
			t.Errorf("run with admin_token %q: %v\n%s\nwant exit 2 naming http.admin_token and %q, not the token",
				tok, err, out, config.AdminTokenCommand)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".cronlock")); err == nil {
		t.Error("a refused daemon created its store")
	}
}
