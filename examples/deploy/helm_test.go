package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// chartValues are the NATS Helm chart's values (nats-io/k8s,
// helm/charts/nats/values.yaml, chart 1.x and later) that nats-values.yaml
// may set: a schema list, since the chart is not a Go module. A path ending
// in ".*" takes any keys below it: the chart passes a merge block on into
// nats-server's configuration, which TestNATSValues checks with
// nats-server's own parser.
var chartValues = []string{
	"config.cluster.enabled", "config.cluster.replicas", "config.cluster.noAdvertise",
	"config.jetstream.enabled", "config.jetstream.fileStore.enabled", "config.jetstream.fileStore.dir",
	"config.jetstream.fileStore.pvc.enabled", "config.jetstream.fileStore.pvc.size",
	"config.jetstream.fileStore.pvc.storageClassName", "config.jetstream.fileStore.maxSize",
	"config.jetstream.memoryStore.enabled", "config.jetstream.memoryStore.maxSize",
	"config.jetstream.merge.*",
	"config.nats.tls.enabled", "config.nats.tls.secretName",
	"config.resolver.enabled", "config.resolver.dir", "config.resolver.pvc.enabled",
	"config.resolver.pvc.size", "config.resolver.pvc.storageClassName",
	"config.resolver.merge.*",
	"config.merge.*",
	"podTemplate.topologySpreadConstraints.*",
	"podDisruptionBudget.enabled",
	"natsBox.enabled", "natsBox.contexts.default.creds.secretName",
}

// chartKnows reports whether the chart has the value at path.
func chartKnows(path string) bool {
	return slices.ContainsFunc(chartValues, func(v string) bool {
		prefix, wild := strings.CutSuffix(v, "*")
		return v == path || wild && strings.HasPrefix(path, prefix)
	})
}

// leafPaths lists the dotted paths of m's scalar values, sorted.
func leafPaths(prefix string, m map[string]any) []string {
	var paths []string
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok && len(sub) > 0 {
			paths = append(paths, leafPaths(prefix+k+".", sub)...)
		} else {
			paths = append(paths, prefix+k)
		}
	}
	sort.Strings(paths)
	return paths
}

func TestNATSValues(t *testing.T) {
	b, err := os.ReadFile("nats-values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.UnmarshalStrict(b, &values); err != nil {
		t.Fatalf("nats-values.yaml: %v", err)
	}
	for _, p := range leafPaths("", values) {
		if !chartKnows(p) {
			t.Errorf("nats-values.yaml: %s: not a value of the NATS chart", p)
		}
	}
	if chartKnows("config.jetstream.filestore.enabled") || chartKnows("config.resolvr.enabled") {
		t.Error("chartKnows accepts misspelled values")
	}
	get := func(path string) any {
		var v any = values
		for _, k := range strings.Split(path, ".") {
			v = v.(map[string]any)[k]
		}
		return v
	}
	for path, want := range map[string]any{
		"config.cluster.enabled": true, "config.cluster.replicas": 3.0, "config.jetstream.enabled": true,
		"config.jetstream.merge.sync_interval": "always", "config.resolver.enabled": true,
	} {
		if got := get(path); got != want {
			t.Errorf("nats-values.yaml: %s = %v, want %v", path, got, want)
		}
	}
	// The chart turns each entry into a TopologySpreadConstraint.
	for key, c := range get("podTemplate.topologySpreadConstraints").(map[string]any) {
		j, _ := json.Marshal(c)
		if _, err := decodeStrict(j, new(corev1.TopologySpreadConstraint)); err != nil {
			t.Errorf("nats-values.yaml: podTemplate.topologySpreadConstraints.%s: %v", key, err)
		}
	}
	checkMerges(t, values)
}

// checkMerges renders the merge blocks into the nats-server configuration
// the chart generates (the jetstream and resolver blocks, and the top
// level) and has nats-server parse it, its nsc placeholders replaced by
// real keys: an unknown or misspelled server option fails.
func checkMerges(t *testing.T, values map[string]any) {
	dir := t.TempDir()
	text := string(mustJSON(t, values["config"].(map[string]any)["merge"]))
	for _, ph := range placeholders(t, dir) {
		text = strings.ReplaceAll(text, ph[0], ph[1])
	}
	var top map[string]any
	if err := json.Unmarshal([]byte(text), &top); err != nil {
		t.Fatal(err)
	}
	js := values["config"].(map[string]any)["jetstream"].(map[string]any)["merge"].(map[string]any)
	res := values["config"].(map[string]any)["resolver"].(map[string]any)["merge"].(map[string]any)
	for k := range res {
		if !slices.Contains(resolverKeys, k) {
			t.Errorf("nats-values.yaml: config.resolver.merge.%s: not an option of nats-server's resolver block", k)
		}
	}
	js["store_dir"] = filepath.Join(dir, "js")
	res["dir"] = filepath.Join(dir, "resolver")
	top["jetstream"], top["resolver"], top["server_name"] = js, res, "nats-0"

	conf := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(conf, mustJSON(t, top), 0o644); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatalf("nats-values.yaml's merge blocks as the chart renders them: %v", err)
	}
	if !opts.SyncAlways || len(opts.TrustedOperators) != 1 || opts.SystemAccount == "" {
		t.Errorf("nats-server options: sync always %v, %d operators, system account %q",
			opts.SyncAlways, len(opts.TrustedOperators), opts.SystemAccount)
	}
}

// resolverKeys are the options of nats-server's resolver block (as read
// by server/opts.go in v2.15), which its parser, unlike those of other
// blocks, does not reject when unknown.
var resolverKeys = []string{"dir", "type", "allow_delete", "hard_delete", "limit", "ttl", "interval", "timeout"}

// placeholders pairs nats-values.yaml's nsc placeholders with real values
// of a fresh operator and system account.
func placeholders(t *testing.T, dir string) [][2]string {
	t.Helper()
	var op, sys string
	conf := string(resolverConf(t, dir))
	if _, err := fmt.Sscanf(conf, "operator: %s\nsystem_account: %s\n", &op, &sys); err != nil {
		t.Fatalf("resolver.conf: %v", err)
	}
	_, preload, _ := strings.Cut(conf, sys+": ")
	sysJWT := strings.Fields(preload)
	if len(sysJWT) == 0 {
		t.Fatal("resolver.conf: no system account JWT")
	}
	return [][2]string{{"OPERATOR_JWT", op}, {"SYS_ACCOUNT_JWT", sysJWT[0]}, {"SYS_ACCOUNT_ID", sys}}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
