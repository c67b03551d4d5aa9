// Package deploy holds no Go code, only deployment files; this test keeps
// them valid and consistent with each other: the cronlock configurations
// pass cronlock's own strict decoder, the NATS configuration passes
// nats-server's, and the stop timeouts of systemd and Kubernetes exceed the
// longest stop cronlock's configuration allows.
package deploy

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
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

func TestCronlockYAML(t *testing.T) {
	cfg, err := config.Load("cronlock.yaml")
	if err != nil {
		t.Fatal(err)
	}
	checkProduction(t, cfg)
}

// checkProduction checks what the README promises of a production config.
func checkProduction(t *testing.T, cfg *config.Config) {
	t.Helper()
	if n := len(strings.Split(cfg.NATS.URL, ",")); n != 3 {
		t.Errorf("%s: nats.url lists %d servers, want the 3 of the cluster", cfg.Path, n)
	}
	if cfg.NATS.CredsFile == "" {
		t.Errorf("%s: no nats.creds_file", cfg.Path)
	}
	if cfg.Lock.Replicas != 3 {
		t.Errorf("%s: lock.replicas = %d, want 3 (R3 buckets)", cfg.Path, cfg.Lock.Replicas)
	}
	if cfg.HTTP.Listen != "0.0.0.0:8736" {
		t.Errorf("%s: http.listen = %q, want 0.0.0.0:8736 for probes and scraping", cfg.Path, cfg.HTTP.Listen)
	}
}

// The ConfigMap's file is cronlock.yaml with other NATS addresses, and the
// Deployment's numbers agree with it.
func TestKubernetes(t *testing.T) {
	docs := kubernetesDocs(t)

	cm := find(t, docs, "ConfigMap")
	data, _ := cm["data"].(map[string]any)
	text, _ := data["cronlock.yaml"].(string)
	cfg, err := config.Parse("kubernetes.yaml:cronlock.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	checkProduction(t, cfg)
	file, err := config.Load("cronlock.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if a, b := sameButNATS(cfg), sameButNATS(file); a != b {
		t.Errorf("the ConfigMap differs from cronlock.yaml in more than nats and job env:\n%s\n---\n%s", a, b)
	}

	dep := find(t, docs, "Deployment")
	get := func(path ...string) any {
		var v any = dep
		for _, p := range path {
			m, _ := v.(map[string]any)
			v = m[p]
		}
		return v
	}
	if r := get("spec", "replicas"); fmt.Sprint(r) != "3" {
		t.Errorf("replicas: %v, want 3", r)
	}
	pod := get("spec", "template", "spec").(map[string]any)
	grace := time.Duration(toInt(pod["terminationGracePeriodSeconds"])) * time.Second
	if budget := stopBudget(cfg); grace <= budget {
		t.Errorf("terminationGracePeriodSeconds %v: not longer than a stop can take (%v)", grace, budget)
	}
	ctr := pod["containers"].([]any)[0].(map[string]any)
	if cmd := fmt.Sprint(ctr["command"]); cmd != "[cronlock run -c /etc/cronlock/cronlock.yaml]" {
		t.Errorf("command: %s", cmd)
	}
	for probe, path := range map[string]string{"readinessProbe": "/readyz", "livenessProbe": "/healthz"} {
		p, _ := ctr[probe].(map[string]any)
		h, _ := p["httpGet"].(map[string]any)
		if h["path"] != path {
			t.Errorf("%s: path %v, want %s", probe, h["path"], path)
		}
	}
	ann := get("spec", "template", "metadata", "annotations").(map[string]any)
	if ann["prometheus.io/scrape"] != "true" || ann["prometheus.io/port"] != "8736" {
		t.Errorf("scrape annotations: %v", ann)
	}
	find(t, docs, "PodDisruptionBudget")
	find(t, docs, "Secret")
}

// sameButNATS renders cfg without what legitimately differs between the VM
// and the Kubernetes file.
func sameButNATS(cfg *config.Config) string {
	c := *cfg
	c.NATS, c.Path = config.NATS{}, ""
	c.Jobs = slices.Clone(c.Jobs)
	for i := range c.Jobs {
		c.Jobs[i].Env, c.Jobs[i].Line = nil, 0
	}
	return fmt.Sprintf("%+v", c)
}

func kubernetesDocs(t *testing.T) []map[string]any {
	b, err := os.ReadFile("kubernetes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var docs []map[string]any
	for _, part := range strings.Split(string(b), "\n---\n") {
		var doc map[string]any
		if err := yaml.Unmarshal([]byte(part), &doc); err != nil {
			t.Fatalf("kubernetes.yaml: %v", err)
		}
		if doc != nil {
			docs = append(docs, doc)
		}
	}
	return docs
}

func find(t *testing.T, docs []map[string]any, kind string) map[string]any {
	t.Helper()
	for _, d := range docs {
		if d["kind"] == kind {
			return d
		}
	}
	t.Fatalf("kubernetes.yaml: no %s", kind)
	return nil
}

func toInt(v any) int64 {
	switch n := v.(type) {
	case uint64:
		return int64(n)
	case int64:
		return n
	case int:
		return int64(n)
	}
	return 0
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
	} {
		if unit[k] != want {
			t.Errorf("%s=%s, want %s", k, unit[k], want)
		}
	}
	cfg, err := config.Load("cronlock.yaml")
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
