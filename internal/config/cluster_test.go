package config

import (
	"reflect"
	"strings"
	"testing"
)

// node is the nats section of one valid node of a three-node cluster,
// before job0; it is 7 lines long.
const node = `nats:
  embedded:
    cluster:
      listen: 127.0.0.1:6222
      routes:
        - nats://127.0.0.1:6223
        - nats-route://127.0.0.1:6224
`

func TestClusterErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		want []want
	}{
		{"one route", "nats:\n  embedded:\n    cluster:\n      listen: :6222\n      routes: [nats://b:6222]\n" + job0,
			[]want{{"5: nats.embedded.cluster.routes", "at least 2"}}},
		{"routes without listen", "nats:\n  embedded:\n    cluster:\n      routes: [nats://b:6222, nats://c:6222]\n" + job0,
			[]want{{"3: nats.embedded.cluster.listen", "is required with nats.embedded.cluster.routes"}}},
		{"listen port 0", strings.Replace(node, "127.0.0.1:6222", "127.0.0.1:0", 1) + job0,
			[]want{{"4: nats.embedded.cluster.listen", "fixed port, not 0"}}},
		{"bad listen", strings.Replace(node, "127.0.0.1:6222", "localhost", 1) + job0,
			[]want{{"4: nats.embedded.cluster.listen", `invalid listen address "localhost"`}}},
		{"route without scheme", strings.Replace(node, "nats://127.0.0.1:6223", "127.0.0.1:6223", 1) + job0,
			[]want{{"6: nats.embedded.cluster.routes[0]", `invalid route "127.0.0.1:6223"`}}},
		{"route without port", strings.Replace(node, "nats-route://127.0.0.1:6224", "nats://c", 1) + job0,
			[]want{{"7: nats.embedded.cluster.routes[1]", `invalid route "nats://c"`}}},
		{"route of http", strings.Replace(node, "nats://127.0.0.1:6223", "http://b:6222", 1) + job0,
			[]want{{"6: nats.embedded.cluster.routes[0]", "invalid route"}}},
		{"route not a string", strings.Replace(node, "nats://127.0.0.1:6223", "6223", 1) + job0,
			[]want{{"6: nats.embedded.cluster.routes[0]", "expected a string, got an integer"}}},
		{"cluster with url", "nats:\n  url: nats://x:4222\n  embedded:\n    cluster:\n      listen: :6222\n      routes: [nats://b:6222, nats://c:6222]\n" + job0,
			[]want{{"4: nats.embedded.cluster", "requires nats.url to be empty"}}},
		{"cluster name with space", node + "      name: my cluster\n" + job0,
			[]want{{"8: nats.embedded.cluster.name", `invalid cluster name "my cluster"`}}},
		{"cluster name alone", "nats:\n  embedded:\n    cluster: {name: prod}\n" + job0,
			[]want{{"3: nats.embedded.cluster.name", "has no effect without"}}},
		{"server name with space", "nats:\n  embedded:\n    server_name: vm 1\n" + job0,
			[]want{{"3: nats.embedded.server_name", `invalid server name "vm 1"`}}},
		{"unknown cluster key", node + "      rotues: []\n" + job0,
			[]want{{"8: nats.embedded.cluster.rotues", "unknown key (valid keys here: name, listen, routes)"}}},
		{"replicas above nodes", node + "lock: {replicas: 5}\n" + job0,
			[]want{{"8: lock.replicas", "is 5, but the embedded NATS has 3 node(s)"}}},
		{"replicas without cluster", "lock:\n  replicas: 3\n" + job0,
			[]want{{"2: lock.replicas", "is 3, but the embedded NATS has 1 node(s)"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("bad.yaml", []byte(tt.src))
			checkErrors(t, err, tt.want)
		})
	}
}

// TestClusterDefaults: a cluster of three nodes makes the buckets R3 unless
// lock.replicas says otherwise; the cluster name defaults to "cronlock";
// nothing changes without a cluster.
func TestClusterDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		src      string
		replicas int
		cluster  Cluster
	}{
		{"three nodes", node, 3, Cluster{Name: "cronlock", Listen: "127.0.0.1:6222",
			Routes: []string{"nats://127.0.0.1:6223", "nats-route://127.0.0.1:6224"}}},
		{"five nodes", strings.Replace(node, "        - nats://127.0.0.1:6223\n",
			"        - nats://127.0.0.1:6223\n        - nats://d:6222\n        - nats://e:6222\n", 1), 3,
			Cluster{Name: "cronlock", Listen: "127.0.0.1:6222",
				Routes: []string{"nats://127.0.0.1:6223", "nats://d:6222", "nats://e:6222", "nats-route://127.0.0.1:6224"}}},
		{"explicit replicas 1", node + "lock: {replicas: 1}\n", 1, Cluster{Name: "cronlock", Listen: "127.0.0.1:6222",
			Routes: []string{"nats://127.0.0.1:6223", "nats-route://127.0.0.1:6224"}}},
		{"named", node + "      name: prod\n", 3, Cluster{Name: "prod", Listen: "127.0.0.1:6222",
			Routes: []string{"nats://127.0.0.1:6223", "nats-route://127.0.0.1:6224"}}},
		{"no cluster", "nats: {embedded: {server_name: box-1}}\n", 1, Cluster{}},
		{"external NATS", "nats: {url: nats://x:4222}\nlock: {replicas: 3}\n", 3, Cluster{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse("ok.yaml", []byte(tt.src+job0))
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Lock.Replicas != tt.replicas {
				t.Errorf("lock.replicas = %d, want %d", cfg.Lock.Replicas, tt.replicas)
			}
			if !reflect.DeepEqual(cfg.NATS.Embedded.Cluster, tt.cluster) {
				t.Errorf("cluster = %+v, want %+v", cfg.NATS.Embedded.Cluster, tt.cluster)
			}
		})
	}
}
