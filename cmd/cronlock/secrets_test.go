package main

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// Tokens of the tests below; each is a random-looking 32 hex digits.
const (
	oldAdmin = "7d1f0c9e2b4a6d8f0e1c3b5a7d9f1e3c"
	newAdmin = "a2c4e6f8091b3d5f7e9c1a3b5d7f9e0c"
	oldRead  = "3e5a7c9e1f2d4b6a8c0e2f4d6b8a0c1e"
	newRead  = "9b8a7c6d5e4f3a2b1c0d9e8f7a6b5c4d"
	natsTok  = "5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c"
)

// writeSecretTestFile writes content to dir/name, by rename so readers never see half.
func writeSecretTestFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path+".tmp", []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
	return path
}

// bearerCall sends method url with the bearer token and returns the status.
func bearerCall(t *testing.T, method, url, token string) int {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestTokenFilesReload: the admin and read tokens come from files; after a
// reload with new files the old tokens are refused at once and the new
// ones work, without a restart. The embedded server, on loopback without a
// token, is warned about once.
func TestTokenFilesReload(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeSecretTestFile(t, dir, "admin", oldAdmin+"\n")
	writeSecretTestFile(t, dir, "read", oldRead+"\n")
	cfg := writeSecretTestFile(t, dir, "cronlock.yaml", fmt.Sprintf(
		"nats:\n  embedded: {store_dir: store, listen: \"127.0.0.1:%d\"}\nlock: {lease: 2s, renew: 500ms}\n"+
			"http: {listen: \"127.0.0.1:0\", admin_token_file: admin, read_token_file: read}\nconfig_watch: false\n"+
			"jobs:\n  - name: j\n    schedule: \"@hourly\"\n    shell: \"true\"\n", reservePort(t)))
	d := startDaemon(t, dir, cfg)
	base := httpBase(t, d)
	d.waitOutput("scheduler running", 30*time.Second)
	for _, c := range []struct {
		method, path, tok string
		want              int
	}{
		{"GET", "/api/jobs", "", 401}, {"GET", "/api/jobs", oldRead, 200}, {"GET", "/metrics", oldRead, 200},
		{"GET", "/metrics", "", 401}, {"GET", "/healthz", "", 200},
		{"POST", "/api/jobs/j/resume", oldRead, 403}, {"POST", "/api/jobs/j/resume", oldAdmin, 200},
	} {
		if got := bearerCall(t, c.method, base+c.path, c.tok); got != c.want {
			t.Errorf("before the reload: %s %s: %d, want %d", c.method, c.path, got, c.want)
		}
	}

	writeSecretTestFile(t, dir, "admin", newAdmin+"\n")
	writeSecretTestFile(t, dir, "read", newRead+"\n")
	d.cmd.Process.Signal(syscall.SIGHUP)
	d.waitOutput("configuration reloaded", 10*time.Second)
	for _, c := range []struct {
		method, path, tok string
		want              int
	}{
		{"GET", "/api/jobs", oldRead, 401}, {"GET", "/api/jobs", newRead, 200}, {"GET", "/api/jobs", newAdmin, 200},
		// The old admin token grants nothing, not even reading: 401.
		{"POST", "/api/jobs/j/resume", oldAdmin, 401}, {"POST", "/api/jobs/j/resume", newRead, 403},
		{"POST", "/api/jobs/j/resume", newAdmin, 200},
	} {
		if got := bearerCall(t, c.method, base+c.path, c.tok); got != c.want {
			t.Errorf("after the reload: %s %s: %d, want %d", c.method, c.path, got, c.want)
		}
	}
	log := d.out.String()
	for _, want := range []string{"http.admin_token changed; the old token no longer works", "http.read_token changed"} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q", want)
		}
	}
	if strings.Contains(log, "take effect only after a restart") {
		t.Error("the reload says the tokens need a restart")
	}
	if n := strings.Count(log, "accepts clients on nats.embedded.listen without a token"); n != 1 {
		t.Errorf("%d warnings about the embedded server without a token, want 1", n)
	}
	if !strings.Contains(log, "refused a request") {
		t.Error("the refused requests are not logged")
	}
	for _, tok := range []string{oldAdmin, newAdmin, oldRead, newRead} {
		if strings.Contains(log, tok) {
			t.Fatalf("the log shows a token")
		}
	}
}

// TestEmbeddedAuthRequired: listening off loopback without a token is a
// config error naming the key; with nats.embedded.auth.token_file the
// daemon starts, a client without the token is refused by the server, and
// operator commands with the same file get in.
func TestEmbeddedAuthRequired(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	port := reservePort(t)
	head := fmt.Sprintf("nats:\n  embedded:\n    store_dir: store\n    listen: \"0.0.0.0:%d\"\n", port)
	jobs := "http: {listen: \"\"}\njobs:\n  - name: j\n    schedule: \"* * * * * *\"\n    shell: \"true\"\n"
	open := writeSecretTestFile(t, dir, "open.yaml", head+jobs)
	out, err := exec.Command(binary(t), "validate", "-c", open).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "open.yaml:4: nats.embedded.listen: listens on") {
		t.Fatalf("validate without auth: %v\n%s\nwant exit 2 naming nats.embedded.listen", err, out)
	}

	writeSecretTestFile(t, dir, "nats-token", natsTok+"\n")
	cfg := writeSecretTestFile(t, dir, "cronlock.yaml", head+"    auth: {token_file: nats-token}\n"+jobs)
	d := startDaemon(t, dir, cfg)
	d.waitOutput("scheduler running", 30*time.Second) // its own in-process connection presents the token
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	if nc, err := nats.Connect(url, nats.MaxReconnects(0)); err == nil || !strings.Contains(strings.ToLower(err.Error()), "authorization violation") {
		if nc != nil {
			nc.Close()
		}
		t.Fatalf("a client without the token: %v, want an authorization violation", err)
	}
	nc, err := nats.Connect(url, nats.Token(natsTok))
	if err != nil {
		t.Fatalf("a client with the token: %v", err)
	}
	nc.Close()
	st, err := exec.Command(binary(t), "status", "-c", cfg).CombinedOutput()
	if err != nil || !strings.Contains(string(st), "j") {
		t.Fatalf("cronlock status with the same file: %v\n%s", err, st)
	}
	if strings.Contains(d.out.String(), natsTok) || strings.Contains(string(st), natsTok) {
		t.Fatal("the token is in the output")
	}
}
