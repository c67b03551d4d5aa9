// Package deploy holds no Go code, only deployment files; its tests keep
// them valid and consistent with each other: the cronlock configurations
// pass cronlock's own strict decoder, the NATS configuration passes
// nats-server's, the Kubernetes manifests decode strictly into the upstream
// API types (k8s.io/api), the Helm values name only the chart's values, the
// Dockerfile builds a static, versioned binary for a non-root user in an
// image with a shell, and the stop timeouts of systemd and Kubernetes
// exceed the longest stop cronlock's configuration allows.
package deploy

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/cronlock/cronlock/internal/config"
)

// releaseTime bounds what a stop adds after the jobs have ended: recording
// the runs and releasing their locks.
const releaseTime = 5 * time.Second

// stopBudget is the longest a stop of cronlock with cfg can take.
func stopBudget(cfg *config.Config) time.Duration {
	var grace time.Duration
	for _, j := range cfg.Jobs {
		grace = max(grace, j.Grace.Duration())
	}
	return cfg.ShutdownGrace.Duration() + grace + releaseTime
}

// exampleSecrets are the secret files the example configurations name: the
// Kubernetes Secret's mount and the VM's file.
var exampleSecrets = []string{"/var/run/secrets/cronlock/admin-token", "/etc/cronlock/admin-token"}

// parseExample parses data (the file name) with each of exampleSecrets
// replaced by a temporary file holding a token, as the pod's Secret mount
// or the VM's file would.
func parseExample(t *testing.T, name string, data []byte) (*config.Config, error) {
	t.Helper()
	tok := filepath.Join(t.TempDir(), "admin-token")
	if err := os.WriteFile(tok, []byte("4f6c2a9e8b1d3f5a7c9e0b2d4f6a8c1e\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := string(data)
	for _, p := range exampleSecrets {
		s = strings.ReplaceAll(s, p, tok)
	}
	return config.Parse(name, []byte(s))
}

// loadExample is parseExample of the file at path.
func loadExample(t *testing.T, path string) (*config.Config, error) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return parseExample(t, path, data)
}

func TestCronlockYAML(t *testing.T) {
	cfg, err := loadExample(t, "cronlock.yaml")
	if err != nil {
		t.Fatal(err)
	}
	checkProduction(t, cfg)
	if n := len(strings.Split(cfg.NATS.URL, ",")); n != 3 {
		t.Errorf("%s: nats.url lists %d servers, want the 3 of the cluster", cfg.Path, n)
	}
}

// yamlChecks has the test that checks each YAML file here, so that a new
// file cannot go unchecked.
var yamlChecks = map[string]string{
	"cronlock.yaml":    "TestCronlockYAML",
	"kubernetes.yaml":  "TestKubernetes",
	"nats-values.yaml": "TestNATSValues",
}

func TestEveryYAMLFileChecked(t *testing.T) {
	for _, pat := range []string{"*.yaml", "*.yml"} {
		files, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if yamlChecks[f] == "" {
				t.Errorf("%s: no test checks it; add one to yamlChecks", f)
			}
		}
	}
}

// checkProduction checks what the README promises of a production config.
func checkProduction(t *testing.T, cfg *config.Config) {
	t.Helper()
	if cfg.NATS.CredsFile == "" {
		t.Errorf("%s: no nats.creds_file", cfg.Path)
	}
	if cfg.Lock.Replicas != 3 {
		t.Errorf("%s: lock.replicas = %d, want 3 (R3 buckets)", cfg.Path, cfg.Lock.Replicas)
	}
	// The port spelled out: the manifests and the scrape config depend on
	// it, not on cronlock's default.
	if host, port, err := net.SplitHostPort(cfg.HTTP.Listen); err != nil || host != "0.0.0.0" || port == "" || port == "0" {
		t.Errorf("%s: http.listen = %q, want 0.0.0.0:PORT for probes and scraping", cfg.Path, cfg.HTTP.Listen)
	}
}

// sameButNATS renders cfg without what legitimately differs between the VM
// and the Kubernetes file.
func sameButNATS(cfg *config.Config) string {
	c := *cfg
	c.NATS, c.Path, c.Digest = config.NATS{}, "", [32]byte{} // Digest: of the bytes, which differ
	c.HTTP.AdminTokenFile = ""                               // a Secret's mount, a file in /etc/cronlock
	c.Jobs = slices.Clone(c.Jobs)
	for i := range c.Jobs {
		c.Jobs[i].Env, c.Jobs[i].Line = nil, 0
	}
	return fmt.Sprintf("%+v", c)
}

func TestSystemdUnit(t *testing.T) {
	b, err := os.ReadFile("cronlock.service")
	if err != nil {
		t.Fatal(err)
	}
	unit := map[string]string{}
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == '[' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Errorf("cronlock.service:%d: not key=value: %s", i+1, line)
		}
		if strings.Contains(v, "#") {
			// systemd takes a trailing comment as part of the value.
			t.Errorf("cronlock.service:%d: comment after a value: %s", i+1, line)
		}
		unit[k] = v
	}
	for k, want := range map[string]string{
		"Type": "simple", "Restart": "always", "KillMode": "mixed", "KillSignal": "SIGTERM",
		"User": "cronlock", "ExecStart": "/usr/local/bin/cronlock run -c /etc/cronlock/cronlock.yaml",
		// Job secrets; "-": optional.
		"EnvironmentFile": "-/etc/cronlock/env",
	} {
		if unit[k] != want {
			t.Errorf("%s=%s, want %s", k, unit[k], want)
		}
	}
	cfg, err := loadExample(t, "cronlock.yaml")
	if err != nil {
		t.Fatal(err)
	}
	stop, err := time.ParseDuration(unit["TimeoutStopSec"])
	if err != nil {
		t.Fatalf("TimeoutStopSec: %v", err)
	}
	if budget := stopBudget(cfg); stop <= budget {
		t.Errorf("TimeoutStopSec=%v: not longer than a stop can take (%v)", stop, budget)
	}

	if sa, err := exec.LookPath("systemd-analyze"); err == nil {
		// Where systemd is installed, let it check every directive. verify
		// wants ExecStart to exist: point it at a stand-in.
		dir := t.TempDir()
		bin := filepath.Join(dir, "cronlock")
		if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		unitFile := filepath.Join(dir, "cronlock.service")
		text := strings.ReplaceAll(string(b), "/usr/local/bin/cronlock", bin)
		if err := os.WriteFile(unitFile, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		// Only its complaints about this unit count, not about the host.
		if out, err := exec.Command(sa, "verify", unitFile).CombinedOutput(); err != nil || bytes.Contains(out, []byte("cronlock.service")) {
			t.Errorf("systemd-analyze verify: %v\n%s", err, out)
		}
	}
}

// nats-server accepts the cluster file, given a resolver.conf like the one
// nsc generates.
func TestNATSCluster(t *testing.T) {
	dir := t.TempDir()
	conf, err := os.ReadFile("nats-cluster.conf")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "nats-cluster.conf"), conf, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "resolver.conf"), resolverConf(t, dir), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("NATS_SERVER_NAME", "nats-2")

	opts, err := server.ProcessConfigFile(filepath.Join(dir, "nats-cluster.conf"))
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case opts.ServerName != "nats-2":
		t.Errorf("server_name %q: not taken from the environment", opts.ServerName)
	case !opts.JetStream || opts.StoreDir == "":
		t.Error("JetStream with a store_dir: not enabled")
	case !opts.SyncAlways:
		t.Error("jetstream.sync_interval: not always")
	case len(opts.Routes) != 3 || opts.Cluster.Name == "" || opts.Cluster.Port != 6222:
		t.Errorf("cluster %q on %d with %d routes, want 3", opts.Cluster.Name, opts.Cluster.Port, len(opts.Routes))
	case len(opts.TrustedOperators) != 1 || opts.SystemAccount == "":
		t.Error("operator and system account from resolver.conf: not set")
	}
}

// resolverConf is what `nsc generate config --nats-resolver` writes, for a
// fresh operator and system account.
func resolverConf(t *testing.T, dir string) []byte {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	op, err := nkeys.CreateOperator()
	must(err)
	opPub, err := op.PublicKey()
	must(err)
	sys, err := nkeys.CreateAccount()
	must(err)
	sysPub, err := sys.PublicKey()
	must(err)

	oc := jwt.NewOperatorClaims(opPub)
	oc.Name = "test"
	oc.SystemAccount = sysPub
	opJWT, err := oc.Encode(op)
	must(err)
	ac := jwt.NewAccountClaims(sysPub)
	ac.Name = "SYS"
	sysJWT, err := ac.Encode(op)
	must(err)
	return fmt.Appendf(nil, `operator: %s
system_account: %s
resolver {
  type: full
  dir: %q
  allow_delete: false
  interval: "2m"
}
resolver_preload: {
  %s: %s
}
`, opJWT, sysPub, filepath.Join(dir, "jwt"), sysPub, sysJWT)
}
