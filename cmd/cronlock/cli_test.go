package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// validConfig is a small valid configuration file.
const validConfig = `
nats: {embedded: {store_dir: ./store}}
http: {listen: ""}
jobs:
  - name: hello
    schedule: "@every 10s"
    shell: echo hello
`

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestExitCodesAndUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := writeFile(t, dir, "c.yaml", validConfig)
	missing := filepath.Join(dir, "missing.yaml")
	for _, tc := range []struct {
		name   string
		env    []string
		args   []string
		code   int
		stdout string // substring
		stderr string // substring
	}{
		{"no command", nil, nil, 2, "", "Usage:"},
		{"unknown command", nil, []string{"frobnicate"}, 2, "", `unknown command "frobnicate"`},
		{"--help", nil, []string{"--help"}, 0, "Commands:", ""},
		{"-h", nil, []string{"-h"}, 0, "Commands:", ""},
		{"help", nil, []string{"help"}, 0, "Exit codes", ""},
		{"help run", nil, []string{"help", "run"}, 0, "Usage: cronlock run", ""},
		{"run --help", nil, []string{"run", "--help"}, 0, "SIGHUP reloads", ""},
		{"validate --help", nil, []string{"validate", "--help"}, 0, "Usage: cronlock validate", ""},
		{"next -h", nil, []string{"next", "-h"}, 0, "Usage: cronlock next", ""},
		{"locks --help", nil, []string{"locks", "--help"}, 0, "--json", ""},
		{"status --help", nil, []string{"status", "--help"}, 0, "abandoned", ""},
		{"trigger --help", nil, []string{"trigger", "--help"}, 0, "under its lock", ""},
		{"unlock --help", nil, []string{"unlock", "--help"}, 0, "--force", ""},
		{"version --help", nil, []string{"version", "--help"}, 0, "Usage: cronlock version", ""},
		{"version", nil, []string{"version"}, 0, "cronlock ", ""},
		{"missing config", nil, []string{"validate", "-c", missing}, 2, "", "not found"},
		{"missing default config", []string{"CRONLOCK_CONFIG=" + missing}, []string{"run"}, 2, "", missing},
		{"env names the file", []string{"CRONLOCK_CONFIG=" + cfg}, []string{"validate"}, 0, "valid, 1 job", ""},
		{"flag wins over env", []string{"CRONLOCK_CONFIG=" + missing}, []string{"validate", "--config", cfg}, 0, "valid, 1 job", ""},
		{"bad flag", nil, []string{"locks", "--bogus"}, 2, "", "flag provided but not defined: -bogus"},
		{"extra argument", nil, []string{"validate", "-c", cfg, "extra"}, 2, "", `unexpected argument "extra"`},
		{"flag after JOB", nil, []string{"next", "hello", "-c", cfg}, 2, "", "flags come first"},
		{"next unknown job", nil, []string{"next", "-c", cfg, "nope"}, 2, "", `job "nope"`},
		{"next -n 0", nil, []string{"next", "-c", cfg, "-n", "0"}, 2, "", "-n 0"},
		{"next bad --from", nil, []string{"next", "-c", cfg, "--from", "yesterday"}, 2, "", "RFC 3339"},
		{"trigger without JOB", nil, []string{"trigger", "-c", cfg}, 2, "", "missing JOB"},
		{"trigger unknown job", nil, []string{"trigger", "-c", cfg, "nope"}, 2, "", `job "nope"`},
		{"trigger --timeout 0", nil, []string{"trigger", "-c", cfg, "--timeout", "0s", "hello"}, 2, "", "--timeout 0s"},
		{"trigger --local --no-wait", nil, []string{"trigger", "-c", cfg, "--local", "--no-wait", "hello"}, 2, "", "--local and --no-wait"},
		{"trigger, embedded without listen", nil, []string{"trigger", "-c", cfg, "hello"}, 2, "", "set nats.embedded.listen"},
		{"trigger --help names exit 3", nil, []string{"trigger", "--help"}, 0, "3 no replica took the request", ""},
		{"unlock without --force", nil, []string{"unlock", "-c", cfg, "hello"}, 2, "", "without --force"},
		{"unlock bad key", nil, []string{"unlock", "-c", cfg, "--force", "a b"}, 2, "", "a b"},
		{"status -n -1", nil, []string{"status", "-c", cfg, "-n", "-1"}, 2, "", "-n -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := cronlock(t, tc.env, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stdout, tc.stdout) || !strings.Contains(r.stderr, tc.stderr) {
				t.Errorf("cronlock %q = exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit %d, stdout with %q, stderr with %q",
					tc.args, r.code, r.stdout, r.stderr, tc.code, tc.stdout, tc.stderr)
			}
		})
	}
}

// TestBinaryExitCodes checks the exit codes of the real process.
func TestBinaryExitCodes(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"frobnicate"}, 2},
		{[]string{"run", "-c", filepath.Join(dir, "missing.yaml")}, 2},
		{[]string{"--help"}, 0},
		{[]string{"trigger", "--help"}, 0},
		{[]string{"version"}, 0},
	} {
		cmd := exec.Command(bin, tc.args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "CRONLOCK_CONFIG=")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tc.code {
			t.Errorf("cronlock %q: exit %d, want %d\n%s", tc.args, code, tc.code, out.String())
		}
	}
}
