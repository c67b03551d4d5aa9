package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// exampleClusterStart is the first line of config.example.yaml's
// commented-out cluster block, the keys of nats.embedded.
const exampleClusterStart = "    # server_name:"

// exampleWithCluster returns config.example.yaml with its commented-out
// cluster block (nats.embedded.server_name and cluster) uncommented, line
// for line, so that its keys are checked like the others.
func exampleWithCluster(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	in := false
	found := 0
	for i, l := range lines {
		if strings.HasPrefix(l, exampleClusterStart) {
			in = true
		}
		if !in {
			continue
		}
		if !strings.HasPrefix(l, "    # ") {
			break
		}
		lines[i] = "    " + strings.TrimPrefix(l, "    # ")
		found++
	}
	if found < 6 {
		t.Fatalf("%s: no commented-out cluster block starting %q (found %d lines)", examplePath, exampleClusterStart, found)
	}
	return []byte(strings.Join(lines, "\n"))
}

// TestExampleClusterBlock: the example's cluster block, uncommented, is a
// valid node of a three-node cluster whose buckets are R3.
func TestExampleClusterBlock(t *testing.T) {
	t.Parallel()
	cfg, err := Parse(examplePath, exampleWithCluster(t))
	if err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(filepath.Join(filepath.Dir(examplePath), DefaultStoreDir)) // relative to the file
	if err != nil {
		t.Fatal(err)
	}
	want := Embedded{StoreDir: abs, ServerName: "vm1", Cluster: Cluster{
		Name: "cronlock", Listen: "0.0.0.0:6222", Routes: []string{"nats://10.0.0.2:6222", "nats://10.0.0.3:6222"},
	}}
	if !reflect.DeepEqual(cfg.NATS.Embedded, want) {
		t.Errorf("nats.embedded = %+v, want %+v", cfg.NATS.Embedded, want)
	}
	if cfg.Lock.Replicas != 1 {
		t.Errorf("lock.replicas = %d, want the example's explicit 1", cfg.Lock.Replicas)
	}
	// Without the example's explicit "replicas: 1", as its comment says.
	data := strings.Replace(string(exampleWithCluster(t)), "\n  replicas: 1\n", "\n", 1)
	if cfg, err = Parse(examplePath, []byte(data)); err != nil {
		t.Fatal(err)
	}
	if cfg.Lock.Replicas != ClusterReplicas {
		t.Errorf("lock.replicas = %d, want %d with three nodes and the key left out", cfg.Lock.Replicas, ClusterReplicas)
	}
}
