package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Node is one nats-server process of a Cluster.
type Node struct {
	Name       string
	Port       int // client port
	HTTPPort   int // monitoring port
	RoutePort  int
	ConfigFile string
	LogFile    string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// Cluster is a JetStream cluster of nats-server processes on loopback, each
// with a monitoring port, that can be killed and restarted node by node with
// the same name, ports and store.
type Cluster struct {
	Bin   string
	Dir   string
	Nodes []*Node
}

// StartCluster writes the configuration of n nodes under dir and starts
// them, waiting until they accept connections and report a JetStream meta
// leader.
func StartCluster(ctx context.Context, bin, dir string, n int) (*Cluster, error) {
	ports, err := FreePorts(3 * n)
	if err != nil {
		return nil, err
	}
	c := &Cluster{Bin: bin, Dir: dir}
	for i := range n {
		c.Nodes = append(c.Nodes, &Node{
			Name:      fmt.Sprintf("n%d", i+1),
			Port:      ports[3*i],
			HTTPPort:  ports[3*i+1],
			RoutePort: ports[3*i+2],
		})
	}
	for i, nd := range c.Nodes {
		routes := ""
		for j, o := range c.Nodes {
			if j != i {
				routes += fmt.Sprintf("    nats-route://127.0.0.1:%d\n", o.RoutePort)
			}
		}
		store := filepath.Join(dir, nd.Name, "store")
		if err := os.MkdirAll(store, 0o755); err != nil {
			return nil, err
		}
		conf := fmt.Sprintf(`server_name: %s
listen: 127.0.0.1:%d
http: 127.0.0.1:%d
jetstream {
  store_dir: %q
  # As the README asks of production lock servers: without it, SIGKILLing
  # two nodes in quick succession lost acknowledged writes (RELIABILITY.md).
  sync_interval: always
}
cluster {
  name: chaos
  # Clients must only know the URLs they were given (the proxies): an
  # advertised node URL would let a replica bypass its proxy on reconnect.
  no_advertise: true
  listen: 127.0.0.1:%d
  routes: [
%s  ]
}
`, nd.Name, nd.Port, nd.HTTPPort, store, nd.RoutePort, routes)
		nd.ConfigFile = filepath.Join(dir, nd.Name, "nats.conf")
		nd.LogFile = filepath.Join(dir, nd.Name, "nats.log")
		if err := os.WriteFile(nd.ConfigFile, []byte(conf), 0o644); err != nil {
			return nil, err
		}
	}
	for i := range c.Nodes {
		if err := c.Start(i); err != nil {
			c.Shutdown()
			return nil, err
		}
	}
	for i := range c.Nodes {
		if err := c.WaitReady(ctx, i); err != nil {
			c.Shutdown()
			return nil, err
		}
	}
	if err := c.WaitMeta(ctx); err != nil {
		c.Shutdown()
		return nil, err
	}
	return c, nil
}

// URL lists every node's client URL.
func (c *Cluster) URL() string {
	s := ""
	for i, nd := range c.Nodes {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprintf("nats://127.0.0.1:%d", nd.Port)
	}
	return s
}

// Addrs are the nodes' client host:ports.
func (c *Cluster) Addrs() []string {
	var out []string
	for _, nd := range c.Nodes {
		out = append(out, fmt.Sprintf("127.0.0.1:%d", nd.Port))
	}
	return out
}

// Running reports whether node i's process is up.
func (c *Cluster) Running(i int) bool {
	nd := c.Nodes[i]
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.cmd == nil {
		return false
	}
	select {
	case <-nd.done:
		return false
	default:
		return true
	}
}

// Start starts node i (again).
func (c *Cluster) Start(i int) error {
	nd := c.Nodes[i]
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.cmd != nil {
		select {
		case <-nd.done:
		default:
			return nil // running
		}
	}
	logf, err := os.OpenFile(nd.LogFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(c.Bin, "-c", nd.ConfigFile)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("chaos: start %s: %w", nd.Name, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(done) }()
	nd.cmd, nd.done = cmd, done
	return nil
}

// Stop stops node i with sig (SIGKILL, or SIGTERM for a clean stop) and
// waits until the process is gone.
func (c *Cluster) Stop(i int, sig syscall.Signal) {
	nd := c.Nodes[i]
	nd.mu.Lock()
	cmd, done := nd.cmd, nd.done
	nd.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

// Shutdown stops every node.
func (c *Cluster) Shutdown() {
	for i := range c.Nodes {
		c.Stop(i, syscall.SIGTERM)
	}
}

// WaitReady waits until node i accepts TCP connections on its client port
// and answers /healthz.
func (c *Cluster) WaitReady(ctx context.Context, i int) error {
	nd := c.Nodes[i]
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", nd.Port), 200*time.Millisecond)
		if err == nil {
			conn.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("chaos: node %s not ready within 30s (log %s)", nd.Name, nd.LogFile)
}

var monClient = &http.Client{Timeout: 500 * time.Millisecond}

// jsz is the part of /jsz?streams=true the harness reads.
type jsz struct {
	Meta *struct {
		Leader   string `json:"leader"`
		Replicas []struct {
			Name    string `json:"name"`
			Current bool   `json:"current"`
		} `json:"replicas"`
	} `json:"meta_cluster"`
	AccountDetails []struct {
		Streams []struct {
			Name    string `json:"name"`
			Cluster *struct {
				Leader string `json:"leader"`
			} `json:"cluster"`
		} `json:"stream_detail"`
	} `json:"account_details"`
}

func (c *Cluster) jsz(i int) (*jsz, error) {
	resp, err := monClient.Get(fmt.Sprintf("http://127.0.0.1:%d/jsz?streams=true", c.Nodes[i].HTTPPort))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var j jsz
	if err := json.NewDecoder(resp.Body).Decode(&j); err != nil {
		return nil, err
	}
	return &j, nil
}

// MetaLeader is the name of the JetStream meta leader as some running node
// sees it, or "".
func (c *Cluster) MetaLeader() string {
	for i := range c.Nodes {
		if !c.Running(i) {
			continue
		}
		if j, err := c.jsz(i); err == nil && j.Meta != nil && j.Meta.Leader != "" {
			return j.Meta.Leader
		}
	}
	return ""
}

func (c *Cluster) metaComplete() bool {
	for i, nd := range c.Nodes {
		if !c.Running(i) {
			continue
		}
		j, err := c.jsz(i)
		if err != nil || j.Meta == nil || j.Meta.Leader != nd.Name {
			continue
		}
		cur := 0
		for _, p := range j.Meta.Replicas {
			if p.Current {
				cur++
			}
		}
		return cur >= len(c.Nodes)-1
	}
	return false
}

// StreamLeader returns the index of the running node that running nodes
// report as the leader of stream (e.g. "KV_locks"), or -1.
func (c *Cluster) StreamLeader(stream string) int {
	return c.StreamLeaders(stream)[0]
}

// StreamLeaders is StreamLeader for several streams at once, asking each
// node at most once (the monitor samples often).
func (c *Cluster) StreamLeaders(streams ...string) []int {
	out := make([]int, len(streams))
	for k := range out {
		out[k] = -1
	}
	missing := len(streams)
	for i := range c.Nodes {
		if missing == 0 {
			break
		}
		if !c.Running(i) {
			continue
		}
		j, err := c.jsz(i)
		if err != nil {
			continue
		}
		for _, a := range j.AccountDetails {
			for _, s := range a.Streams {
				if s.Cluster == nil || s.Cluster.Leader == "" {
					continue
				}
				for k, name := range streams {
					if name != s.Name || out[k] >= 0 {
						continue
					}
					if l := c.runningNode(s.Cluster.Leader); l >= 0 {
						out[k] = l
						missing--
					}
				}
			}
		}
	}
	return out
}

// runningNode returns the index of the running node called name, or -1.
func (c *Cluster) runningNode(name string) int {
	for k, nd := range c.Nodes {
		if nd.Name == name && c.Running(k) {
			return k
		}
	}
	return -1
}

// WaitMeta waits until the meta leader sees every other node as a
// current peer, so that R3 streams can be placed.
func (c *Cluster) WaitMeta(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if c.metaComplete() {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("chaos: no JetStream meta leader within 30s")
}

// FreePorts reserves n distinct loopback ports (released before use).
func FreePorts(n int) ([]int, error) {
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
