package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/config"
	"github.com/cronlock/cronlock/scheduler"
)

// clusterJob appends "TICK OWNER" to $OUT at every tick it runs.
const clusterJob = `echo "$CRONLOCK_TICK $CRONLOCK_OWNER" >> "$OUT"`

// electionBound is how long the cluster may take to run ticks again after
// a node is SIGKILLed: the lease (2 s in clusterConfig) for a lock its
// process held, and a new RAFT leader for the groups it led, which
// nats-server elects 4 to 9 s after the leader's last heartbeat.
const electionBound = 2*time.Second + 9*time.Second + 4*time.Second

// clusterNode is one cronlock process of a three-node embedded cluster.
type clusterNode struct {
	name   string
	config string
	client string // nats://TOKEN@127.0.0.1:PORT of its embedded server
	d      *daemon
}

// clusterConfig is node i's configuration: its own store, client port and
// route port, the other nodes' routes, and the default server name. Besides
// cluster.job, which any node runs, cluster.n1 runs only on n1 (label
// node: n1), appending to out + ".n1".
func clusterConfig(dir, out string, i int, clientPorts, routePorts []int) string {
	var routes []string
	for k, p := range routePorts {
		if k != i {
			routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p))
		}
	}
	return fmt.Sprintf(`
nats:
  embedded:
    store_dir: %q
    listen: 127.0.0.1:%d
    auth: {token: %s} # clients need it; the routes between the nodes do not
    cluster:
      name: cronlock-test
      listen: 127.0.0.1:%d
      routes: [%s]
lock: {lease: 2s, renew: 500ms, owner: n%d}
replica: {labels: {node: n%d}}
http: {listen: ""}
shutdown_grace: 1s
jobs:
  - name: cluster.job
    schedule: "* * * * * *"
    env: {OUT: %q}
    shell: %q
  - name: cluster.n1
    schedule: "* * * * * *"
    on_replicas: {node: n1}
    env: {OUT: %q}
    shell: %q
`, filepath.Join(dir, fmt.Sprintf("store%d", i+1)), clientPorts[i], natsTok, routePorts[i], strings.Join(routes, ", "),
		i+1, i+1, out, clusterJob, out+".n1", clusterJob)
}

// clusterTicks maps each tick in out (Unix seconds) to the owners that
// ran it.
func clusterTicks(t *testing.T, out string) map[int64][]string {
	t.Helper()
	ticks := map[int64][]string{}
	for _, l := range fileLines(t, out) {
		tick, owner, ok := strings.Cut(l, " ")
		at, err := time.Parse(time.RFC3339, tick)
		if !ok || err != nil {
			t.Fatalf("bad line %q in %s", l, out)
		}
		ticks[at.Unix()] = append(ticks[at.Unix()], owner)
	}
	return ticks
}

// consecutiveFrom reports whether n ticks in a row ran, the first of them
// at or after from.
func consecutiveFrom(ticks map[int64][]string, from time.Time, n int) bool {
	for at := from; !at.Add(time.Duration(n-1) * time.Second).After(time.Now()); at = at.Add(time.Second) {
		if ranFrom(ticks, at, at.Add(time.Duration(n-1)*time.Second)) {
			return true
		}
	}
	return false
}

// ranFrom reports whether every tick from `from` to `to` ran (once or
// more: the caller checks for twice).
func ranFrom(ticks map[int64][]string, from, to time.Time) bool {
	for at := from; !at.After(to); at = at.Add(time.Second) {
		if len(ticks[at.Unix()]) == 0 {
			return false
		}
	}
	return true
}

// TestThreeEmbeddedNodes runs three `cronlock run` processes on one host,
// each with its own embedded NATS node, store, client port and route port,
// as one JetStream cluster with R3 buckets. A job every second runs once
// per tick; the first process started is SIGKILLed and the other two run
// the job again within electionBound; restarted on its store, it rejoins
// and runs ticks again. No tick runs twice, in the job's own record nor in
// the shared history.
func TestThreeEmbeddedNodes(t *testing.T) {
	t.Parallel()
	binary(t)
	begin := time.Now()
	dir := t.TempDir()
	out := filepath.Join(dir, "runs")
	clientPorts := []int{reservePort(t), reservePort(t), reservePort(t)}
	routePorts := []int{reservePort(t), reservePort(t), reservePort(t)}
	nodes := make([]*clusterNode, 3)
	for i := range nodes {
		name := fmt.Sprintf("n%d", i+1)
		nodes[i] = &clusterNode{name: name, client: fmt.Sprintf("nats://%s@127.0.0.1:%d", natsTok, clientPorts[i]),
			config: writeFile(t, dir, name+".yaml", clusterConfig(dir, out, i, clientPorts, routePorts))}
	}
	for _, n := range nodes {
		n.d = startDaemon(t, dir, n.config)
	}
	for _, n := range nodes {
		n.d.waitOutput("scheduler running", 30*time.Second)
	}
	formed := time.Now()
	t.Logf("cluster formed, every scheduler running %v after the first start", formed.Sub(begin).Round(time.Millisecond))

	// Once per tick on the full cluster: three ticks in a row, from the
	// first the cluster could take (a scheduler runs before the cluster
	// has elected its leaders, and the ticks until then are missed).
	first := time.Now().Truncate(time.Second).Add(time.Second)
	waitFor(t, 10*time.Second, "three consecutive ticks run", func() bool {
		return consecutiveFrom(clusterTicks(t, out), first, 3)
	})

	// SIGKILL the node started first; the other two keep the job running.
	nodes[0].d.kill()
	killed := time.Now()
	var resumed time.Time
	waitFor(t, electionBound+3*time.Second, "three consecutive ticks run by the two nodes left", func() bool {
		ticks := clusterTicks(t, out)
		for at := killed.Truncate(time.Second).Add(time.Second); !at.After(time.Now()); at = at.Add(time.Second) {
			if ranFrom(ticks, at, at.Add(2*time.Second)) {
				resumed = at
				return true
			}
		}
		return false
	})
	missed := 0
	ticks := clusterTicks(t, out)
	for at := killed.Truncate(time.Second).Add(time.Second); at.Before(resumed); at = at.Add(time.Second) {
		if len(ticks[at.Unix()]) == 0 {
			missed++
		}
	}
	t.Logf("n1 SIGKILLed: %d tick(s) missed, ticks run again from %v after the kill",
		missed, resumed.Sub(killed).Round(time.Millisecond))
	if gap := resumed.Sub(killed); gap > electionBound {
		t.Errorf("ticks ran again %v after the kill, want within %v", gap, electionBound)
	}

	// Restarted on its store, n1 rejoins: its scheduler runs (which needs
	// the cluster: its node alone has no majority) and it runs ticks again,
	// of the job only it may run (cluster.job stays with the replica it is
	// dealt to, which claims it first).
	restarted := time.Now()
	nodes[0].d = startDaemon(t, dir, nodes[0].config)
	nodes[0].d.waitOutput("scheduler running", 30*time.Second)
	rejoined := time.Now()
	// A rejoined node's streams may still be catching up; on a loaded
	// machine that took over 20 s once.
	waitFor(t, 45*time.Second, "n1 runs a tick after its restart", func() bool {
		for at, owners := range clusterTicks(t, out+".n1") {
			if at > rejoined.Unix() && slices.Contains(owners, "n1") {
				return true
			}
		}
		return false
	})
	t.Logf("n1 restarted: scheduler running after %v, ran a tick %v after its restart",
		rejoined.Sub(restarted).Round(time.Millisecond), time.Since(restarted).Round(time.Millisecond))

	// An operator command on a node reaches the cluster through the node's
	// client port and sees the three replicas.
	waitFor(t, 10*time.Second, "`cronlock replicas` on n2 lists n1, n2 and n3", func() bool {
		r := cronlock(t, nil, "replicas", "--json", "-c", nodes[1].config)
		return r.code == 0 && strings.Contains(r.stdout, `"id": "n1"`) &&
			strings.Contains(r.stdout, `"id": "n2"`) && strings.Contains(r.stdout, `"id": "n3"`)
	})
	checkOncePerTick(t, out, nodes[1].client)

	// Stopped together, as a host shutting down would: one after the other,
	// the last would wait out NATS timeouts without a majority.
	stopping := time.Now()
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Go(n.d.stop)
	}
	wg.Wait()
	t.Logf("all three stopped in %v; wall time %v", time.Since(stopping).Round(time.Millisecond),
		time.Since(begin).Round(time.Millisecond))
}

// checkOncePerTick fails the test for a tick run twice, in the job's record
// or in the shared history read from the cluster at url, and for a run the
// history does not record as succeeded (abandoned: the killed node may
// have been running one).
func checkOncePerTick(t *testing.T, out, url string) {
	t.Helper()
	for at, owners := range clusterTicks(t, out) {
		if len(owners) > 1 {
			t.Errorf("tick %s ran %d times, by %v", time.Unix(at, 0).UTC().Format(time.RFC3339), len(owners), owners)
		}
	}
	seen := map[int64]bool{}
	for _, r := range historyOf(t, url, "cluster.job") {
		if r.Status == scheduler.StatusMissed || r.Status == scheduler.StatusRunning || r.Status == scheduler.StatusAbandoned {
			continue
		}
		if seen[r.Tick.Unix()] {
			t.Errorf("the history records tick %s twice", r.Tick.Format(time.RFC3339))
		}
		seen[r.Tick.Unix()] = true
		if r.Status != scheduler.StatusSucceeded {
			t.Errorf("the history records tick %s %s, want succeeded", r.Tick.Format(time.RFC3339), r.Status)
		}
	}
	if len(seen) == 0 {
		t.Error("the shared history has no run of cluster.job")
	}
}

// threeVMs is the example of three VMs running cronlock and nothing else.
const threeVMs = "../../examples/three-vms"

// TestThreeVMsExample: each of the example's configurations passes
// `cronlock validate`; together they are one cluster: the same cluster
// name and settings, distinct server names, each node's routes are the
// other two nodes' route addresses, and the buckets are R3.
func TestThreeVMsExample(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(threeVMs, "*.yaml"))
	if err != nil || len(files) != 3 {
		t.Fatalf("%s: %d YAML files (%v), want the three VMs' configurations", threeVMs, len(files), err)
	}
	var cfgs []*config.Config
	routeOf := map[string]string{} // route URL -> file
	for _, f := range files {
		r := cronlock(t, nil, "validate", "-c", f)
		if r.code != 0 || !strings.Contains(r.stdout, ": valid, ") {
			t.Fatalf("cronlock validate -c %s: exit %d\n%s%s", f, r.code, r.stdout, r.stderr)
		}
		cfg, err := config.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		cfgs = append(cfgs, cfg)
		routeOf["nats://"+cfg.NATS.Embedded.Cluster.Listen] = f
	}
	names := map[string]bool{}
	for _, cfg := range cfgs {
		e := cfg.NATS.Embedded
		if names[e.ServerName] || e.ServerName == "" {
			t.Errorf("%s: server_name %q is empty or not unique", cfg.Path, e.ServerName)
		}
		names[e.ServerName] = true
		if cfg.Lock.Replicas != config.ClusterReplicas || e.Cluster.Nodes() != 3 {
			t.Errorf("%s: %d nodes, lock.replicas %d; want 3 and 3", cfg.Path, e.Cluster.Nodes(), cfg.Lock.Replicas)
		}
		for _, r := range e.Cluster.Routes {
			if other, ok := routeOf[r]; !ok || other == cfg.Path {
				t.Errorf("%s: route %s is not another VM's cluster.listen", cfg.Path, r)
			}
		}
		// Apart from this node's own three lines, the files agree.
		same := *cfg
		same.Path, same.Digest, same.NATS.Embedded.ServerName = "", [32]byte{}, ""
		same.NATS.Embedded.Cluster.Listen, same.NATS.Embedded.Cluster.Routes = "", nil
		first := *cfgs[0]
		first.Path, first.Digest, first.NATS.Embedded.ServerName = "", [32]byte{}, ""
		first.NATS.Embedded.Cluster.Listen, first.NATS.Embedded.Cluster.Routes = "", nil
		if !reflect.DeepEqual(same, first) {
			t.Errorf("%s differs from %s in more than server_name, cluster.listen and routes", cfg.Path, cfgs[0].Path)
		}
	}
}

// TestClusterOperatorWithoutNode: an operator command of a cluster node
// whose `cronlock run` is not running says so and exits non-zero, instead
// of starting a node of its own on the store.
func TestClusterOperatorWithoutNode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ports := []int{reservePort(t), reservePort(t), reservePort(t)}
	cfg := writeFile(t, dir, "n1.yaml", clusterConfig(dir, filepath.Join(dir, "runs"), 0, ports, ports))
	r := cronlock(t, nil, "status", "-c", cfg)
	if r.code == 0 || !strings.Contains(r.stderr, "no `cronlock run` answers at nats.embedded.listen") {
		t.Errorf("status without the node running: exit %d, stderr %q", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "store1")); !os.IsNotExist(err) {
		t.Errorf("the operator command created the store: %v", err)
	}
}

// oneHost is the README's three processes on one host.
const oneHost = "../../examples/one-host"

// The one-host example's three files are valid, and each node's routes are
// the two others' cluster.listen, with distinct ports and stores.
func TestOneHostExample(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(oneHost, "node*.yaml"))
	if err != nil || len(files) != 3 {
		t.Fatalf("%s: %d node files (%v), want three", oneHost, len(files), err)
	}
	listens := map[string]string{}
	var cfgs []*config.Config
	for _, f := range files {
		if r := cronlock(t, nil, "validate", "-c", f); r.code != 0 {
			t.Fatalf("cronlock validate -c %s: exit %d\n%s%s", f, r.code, r.stdout, r.stderr)
		}
		cfg, err := config.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		cfgs = append(cfgs, cfg)
		e := cfg.NATS.Embedded
		for _, addr := range []string{e.Listen, e.Cluster.Listen, cfg.HTTP.Listen, e.StoreDir} {
			if other, dup := listens[addr]; dup {
				t.Errorf("%s and %s share %s", f, other, addr)
			}
			listens[addr] = f
		}
	}
	for _, cfg := range cfgs {
		e := cfg.NATS.Embedded
		if cfg.Lock.Replicas != config.ClusterReplicas || e.Cluster.Nodes() != 3 {
			t.Errorf("%s: %d nodes, lock.replicas %d; want 3 and 3", cfg.Path, e.Cluster.Nodes(), cfg.Lock.Replicas)
		}
		for _, r := range e.Cluster.Routes {
			if other, ok := listens[strings.TrimPrefix(r, "nats://")]; !ok || other == cfg.Path {
				t.Errorf("%s: route %s is not another node's cluster.listen", cfg.Path, r)
			}
		}
	}
}
