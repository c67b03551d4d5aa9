// Package monitoring holds the Prometheus rules, the Grafana dashboard and
// the Prometheus Operator objects for cronlock; its tests check them with
// Prometheus's own promtool and against the /metrics of a running daemon.
package monitoring

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/cronlock/cronlock/examples/internal/extest"
	"github.com/cronlock/cronlock/internal/app"
	"github.com/cronlock/cronlock/internal/config"
	"github.com/cronlock/cronlock/internal/natstest"
)

const (
	rulesFile     = "cronlock-rules.yaml"
	operatorFile  = "prometheus-operator.yaml"
	dashboardFile = "grafana-dashboard.json"
)

// promtool returns the path of Prometheus's promtool (Debian's prometheus
// package, which .ci/run installs). Without it the test fails under
// CI=true and is skipped elsewhere.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("promtool not found (apt-get install prometheus; .ci/run does it)")
	}
	t.Skip("promtool not found; apt-get install prometheus to run this test")
	return ""
}

// runPromtool runs promtool with args and stdin, failing the test unless it
// exits 0; it returns its combined output.
func runPromtool(t *testing.T, stdin []byte, args ...string) string {
	t.Helper()
	cmd := exec.Command(promtool(t), args...)
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// rules is the shape of a Prometheus rules file that the tests read.
type rules struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert string `yaml:"alert"`
			Expr  string `yaml:"expr"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// operatorDocs decodes the documents of prometheus-operator.yaml by kind.
func operatorDocs(t *testing.T) map[string]map[string]any {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(readFile(t, operatorFile)))
	out := map[string]map[string]any{}
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", operatorFile, err)
		}
		kind, _ := doc["kind"].(string)
		if _, dup := out[kind]; dup {
			t.Fatalf("%s: two %s documents", operatorFile, kind)
		}
		out[kind] = doc
	}
}

// TestRulesPassPromtool: the rules file, and the PrometheusRule's groups as
// a rules file, pass `promtool check rules`, and every alert the issue asks
// for is there.
func TestRulesPassPromtool(t *testing.T) {
	t.Parallel()
	runPromtool(t, nil, "check", "rules", rulesFile)
	spec, _ := operatorDocs(t)["PrometheusRule"]["spec"].(map[string]any)
	b, err := yaml.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "operator-rules.yaml")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	runPromtool(t, nil, "check", "rules", path)

	var r rules
	if err := yaml.Unmarshal(readFile(t, rulesFile), &r); err != nil {
		t.Fatal(err)
	}
	exprs := map[string]string{}
	for _, g := range r.Groups {
		for _, rule := range g.Rules {
			exprs[rule.Alert] = rule.Expr
		}
	}
	for alert, want := range map[string]string{
		"CronlockRunFailed":        `cronlock_runs_total{status=~"failed|timeout|lost"}`,
		"CronlockTickMissed":       `cronlock_ticks_missed_total{reason!="overlap"}`,
		"CronlockNoRecentSuccess":  "cronlock_job_next_run_timestamp_seconds",
		"CronlockReplicasMissing":  "cronlock_live_replicas",
		"CronlockClockOffset":      "abs(cronlock_clock_offset_seconds) > 1",
		"CronlockNATSDisconnected": "cronlock_nats_connected == 0",
	} {
		if !strings.Contains(exprs[alert], want) {
			t.Errorf("alert %s: expr %q, want it to contain %q", alert, exprs[alert], want)
		}
	}
}

// TestOperatorObjects: the PrometheusRule's groups are those of the rules
// file, and the ServiceMonitor scrapes the Service's port with the job
// label kept.
func TestOperatorObjects(t *testing.T) {
	t.Parallel()
	docs := operatorDocs(t)
	var file map[string]any
	if err := yaml.Unmarshal(readFile(t, rulesFile), &file); err != nil {
		t.Fatal(err)
	}
	spec, _ := docs["PrometheusRule"]["spec"].(map[string]any)
	if spec == nil || !reflect.DeepEqual(spec["groups"], file["groups"]) || len(spec) != 1 {
		t.Errorf("%s: the PrometheusRule's spec is not {groups: <the groups of %s>}", operatorFile, rulesFile)
	}
	sm, _ := docs["ServiceMonitor"]["spec"].(map[string]any)
	svc, _ := docs["Service"]["metadata"].(map[string]any)
	ports := fmt.Sprint(docs["Service"]["spec"])
	want := fmt.Sprint(svc["labels"])
	sel, _ := sm["selector"].(map[string]any)
	eps, _ := sm["endpoints"].([]any)
	if fmt.Sprint(sel["matchLabels"]) != want || len(eps) != 1 {
		t.Fatalf("ServiceMonitor %v does not select the Service labelled %s", sm, want)
	}
	ep, _ := eps[0].(map[string]any)
	if ep["honorLabels"] != true || ep["path"] != "/metrics" || !strings.Contains(ports, fmt.Sprintf("name:%v", ep["port"])) {
		t.Errorf("ServiceMonitor endpoint %v: want port of the Service (%s), path /metrics, honorLabels true", ep, ports)
	}
}

// metricName matches the metric names cronlock's rules and dashboard use.
var metricName = regexp.MustCompile(`\bcronlock_[a-z0-9_]+\b`)

// usedMetrics returns the cronlock metric names in the rules' expressions
// and in the dashboard's queries (panels and variables).
func usedMetrics(t *testing.T) []string {
	t.Helper()
	var r rules
	if err := yaml.Unmarshal(readFile(t, rulesFile), &r); err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, g := range r.Groups {
		for _, rule := range g.Rules {
			texts = append(texts, rule.Expr)
		}
	}
	var dash any
	if err := json.Unmarshal(readFile(t, dashboardFile), &dash); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && (k == "expr" || k == "query" || k == "definition") {
					texts = append(texts, s)
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(dash)
	var names []string
	for _, s := range texts {
		names = append(names, metricName.FindAllString(s, -1)...)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// TestMonitoringMetricsExist: every metric the rules and the dashboard use
// is in /metrics of a running daemon (embedded NATS, one job that has run),
// every job's counters start at 0, and `promtool check metrics` finds
// nothing to say about the page.
func TestMonitoringMetricsExist(t *testing.T) {
	t.Parallel()
	used := usedMetrics(t)
	if len(used) < 12 {
		t.Fatalf("found only %v in the rules and the dashboard", used)
	}
	page := daemonMetrics(t)
	have := map[string]bool{}
	for _, line := range strings.Split(page, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, _, _ := strings.Cut(line, " ")
		name, _, _ = strings.Cut(name, "{")
		have[name] = true
	}
	for _, name := range used {
		if !have[name] {
			t.Errorf("%s is used by the rules or the dashboard but not in /metrics", name)
		}
	}
	for _, series := range []string{
		`cronlock_runs_total{job="beat",status="failed"} 0`,
		`cronlock_ticks_missed_total{job="beat",reason="no_replica"} 0`,
		`cronlock_ticks_missed_total{job="beat",reason="lock_held"} 0`,
		`cronlock_leases_lost_total{job="beat"} 0`,
		`cronlock_job_suspended{job="beat"} 0`,
		`cronlock_job_info{job="beat",schedule="* * * * * *",timezone="Europe/Paris"} 1`,
		`cronlock_job_interval_seconds{job="beat"} 1`,
	} {
		if !strings.Contains(page, "\n"+series+"\n") {
			t.Errorf("/metrics lacks %s", series)
		}
	}
	if out := runPromtool(t, []byte(page), "check", "metrics"); strings.TrimSpace(out) != "" {
		t.Errorf("promtool check metrics:\n%s", out)
	}
}

// daemonMetrics runs a daemon with one job every second on an embedded
// NATS server until the job has succeeded, and returns its /metrics.
func daemonMetrics(t *testing.T) string {
	t.Helper()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	path := filepath.Join(t.TempDir(), "cronlock.yaml")
	yml := fmt.Sprintf(`nats: {url: %s}
lock: {lease: 2s, renew: 500ms}
http: {listen: "127.0.0.1:0"}
config_watch: false
log: {level: warn}
jobs:
  - name: beat
    schedule: "* * * * * *"
    timezone: Europe/Paris
    shell: "true"
`, url)
	if err := os.WriteFile(path, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var logs bytes.Buffer
	d, err := app.NewDaemon(ctx, cfg, &logs)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	base := "http://" + d.HTTPAddr().String()
	deadline := time.Now().Add(20 * time.Second)
	for {
		page := extest.Get(t, base+"/metrics")
		if strings.Contains(page, `cronlock_last_success_timestamp_seconds{job="beat"}`) &&
			strings.Contains(page, `cronlock_live_replicas 1`) {
			return page
		}
		if time.Now().After(deadline) {
			t.Fatalf("no success of the job within 20s; log:\n%s", logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
