// Package natstest starts real, embedded nats-server instances for tests and
// benchmarks: a single JetStream node, or a JetStream cluster of several nodes
// in one process. Every server listens on a random loopback port, keeps its
// store in a temporary directory, and is shut down by t.Cleanup.
//
// It owns test servers, clusters and the proxies tests cut connections
// with; the product never imports it, and it knows nothing of cronlock's
// buckets or jobs.
package natstest

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ready bounds how long a server may take to accept connections.
const ready = 10 * time.Second

// Options adjusts a single server. The zero value is a JetStream server on a
// random loopback port with a temporary store.
type Options struct {
	// Configure, when set, may change the server options before start
	// (accounts, authorization, limits).
	Configure func(*server.Options)
}

// RunServer starts one JetStream-enabled nats-server and returns it.
func RunServer(tb testing.TB, o Options) *server.Server {
	tb.Helper()
	opts := &server.Options{
		Host:      "127.0.0.1",
		Port:      server.RANDOM_PORT,
		JetStream: true,
		StoreDir:  tb.TempDir(),
		NoLog:     true,
		NoSigs:    true,
	}
	if o.Configure != nil {
		o.Configure(opts)
	}
	s := start(tb, opts)
	tb.Cleanup(s.Shutdown)
	return s
}

func start(tb testing.TB, opts *server.Options) *server.Server {
	tb.Helper()
	s, err := server.NewServer(opts)
	if err != nil {
		tb.Fatalf("natstest: new server: %v", err)
	}
	go s.Start()
	if !s.ReadyForConnections(ready) {
		s.Shutdown()
		tb.Fatalf("natstest: server not ready within %v", ready)
	}
	return s
}

// Connect opens a client connection to url (one or more comma-separated
// URLs) and returns it with its JetStream context. The connection is closed
// by t.Cleanup. Extra options follow the test defaults (fast reconnects).
func Connect(tb testing.TB, url string, opts ...nats.Option) (*nats.Conn, jetstream.JetStream) {
	tb.Helper()
	all := append([]nats.Option{
		nats.MaxReconnects(-1),
		nats.ReconnectWait(50 * time.Millisecond),
		nats.ReconnectJitter(10*time.Millisecond, 10*time.Millisecond),
	}, opts...)
	nc, err := nats.Connect(url, all...)
	if err != nil {
		tb.Fatalf("natstest: connect %s: %v", url, err)
	}
	tb.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		tb.Fatalf("natstest: jetstream: %v", err)
	}
	return nc, js
}

// Cluster is a JetStream cluster of in-process servers that can be stopped
// and restarted one node at a time, keeping each node's name, ports and store.
type Cluster struct {
	tb    testing.TB
	opts  []*server.Options
	nodes []*server.Server
}

// RunCluster starts an n-node JetStream cluster and waits until it has a
// meta leader.
func RunCluster(tb testing.TB, n int) *Cluster {
	tb.Helper()
	clientPorts := freePorts(tb, n)
	routePorts := freePorts(tb, n)
	routes := make([]string, n)
	for i := range n {
		routes[i] = fmt.Sprintf("nats-route://127.0.0.1:%d", routePorts[i])
	}
	c := &Cluster{tb: tb}
	for i := range n {
		o := &server.Options{
			ServerName: fmt.Sprintf("n%d", i+1),
			Host:       "127.0.0.1",
			Port:       clientPorts[i],
			JetStream:  true,
			StoreDir:   tb.TempDir(),
			NoLog:      true,
			NoSigs:     true,
			Cluster: server.ClusterOpts{
				Name: "cronlock-test",
				Host: "127.0.0.1",
				Port: routePorts[i],
			},
			Routes: server.RoutesFromStr(joinRoutes(routes, i)),
		}
		c.opts = append(c.opts, o)
	}
	c.nodes = make([]*server.Server, n)
	for i := range n {
		s, err := server.NewServer(c.opts[i].Clone())
		if err != nil {
			tb.Fatalf("natstest: node %d: %v", i, err)
		}
		go s.Start()
		c.nodes[i] = s
	}
	tb.Cleanup(c.Shutdown)
	for i, s := range c.nodes {
		if !s.ReadyForConnections(ready) {
			tb.Fatalf("natstest: node %d not ready", i)
		}
	}
	c.WaitMetaLeader()
	return c
}

func joinRoutes(routes []string, self int) string {
	out := ""
	for i, r := range routes {
		if i == self {
			continue
		}
		if out != "" {
			out += ","
		}
		out += r
	}
	return out
}

// URL returns a comma-separated list of every node's client URL, so a client
// fails over between them.
func (c *Cluster) URL() string {
	out := ""
	for i, o := range c.opts {
		if i > 0 {
			out += ","
		}
		out += fmt.Sprintf("nats://127.0.0.1:%d", o.Port)
	}
	return out
}

// Node returns the running server at index i, or nil if it is stopped.
func (c *Cluster) Node(i int) *server.Server { return c.nodes[i] }

// Size is the number of nodes.
func (c *Cluster) Size() int { return len(c.nodes) }

// Stop shuts node i down and waits until it is gone.
func (c *Cluster) Stop(i int) {
	if s := c.nodes[i]; s != nil {
		s.Shutdown()
		s.WaitForShutdown()
		c.nodes[i] = nil
	}
}

// Start restarts a stopped node i with its original name, ports and store.
func (c *Cluster) Start(i int) {
	c.tb.Helper()
	if c.nodes[i] != nil {
		return
	}
	c.nodes[i] = start(c.tb, c.opts[i].Clone())
}

// Shutdown stops every node.
func (c *Cluster) Shutdown() {
	for i := range c.nodes {
		c.Stop(i)
	}
}

// WaitMetaLeader waits until some node is the JetStream meta leader and
// every running node is current with it, so streams can be placed on all.
func (c *Cluster) WaitMetaLeader() {
	c.tb.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		leader, current, running := false, 0, 0
		for _, s := range c.nodes {
			if s == nil {
				continue
			}
			running++
			if s.JetStreamIsLeader() && len(s.JetStreamClusterPeers()) >= running {
				leader = true
			}
			if s.JetStreamIsCurrent() {
				current++
			}
		}
		if leader && current == running {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.tb.Fatalf("natstest: no JetStream meta leader within 20s")
}

// StreamLeader returns the index of the node leading the stream in the
// global account, waiting up to 20 s for one to be elected.
func (c *Cluster) StreamLeader(stream string) int {
	c.tb.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for i, s := range c.nodes {
			if s != nil && s.JetStreamIsStreamLeader(server.DEFAULT_GLOBAL_ACCOUNT, stream) {
				return i
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.tb.Fatalf("natstest: no leader for stream %s within 20s", stream)
	return -1
}

// freePorts reserves n distinct loopback ports. They are released before
// the servers bind them; a collision in that window is unlikely and fails
// the test loudly rather than silently.
func freePorts(tb testing.TB, n int) []int {
	tb.Helper()
	ls := make([]net.Listener, n)
	ports := make([]int, n)
	for i := range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatalf("natstest: reserve port: %v", err)
		}
		ls[i] = l
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}
