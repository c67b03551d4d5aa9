package config

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
)

// Defaults of nats.embedded.cluster.
const (
	DefaultClusterName = "cronlock"
	// ClusterReplicas is lock.replicas' default with nats.embedded.cluster
	// of at least as many nodes: the buckets survive the loss of one node
	// (a majority, 2 of 3, stays).
	ClusterReplicas = 3
	// minClusterRoutes is the fewest other nodes a cluster node must list:
	// with two nodes, losing either loses JetStream's majority.
	minClusterRoutes = 2
)

// InUse reports whether the embedded server is to join a cluster.
func (c Cluster) InUse() bool { return c.Listen != "" || len(c.Routes) > 0 }

// Nodes is the number of nodes of the cluster as configured: this one and
// one per route; 1 without a cluster.
func (c Cluster) Nodes() int {
	if !c.InUse() {
		return 1
	}
	return 1 + len(c.Routes)
}

// natsName is what cronlock accepts as a NATS server or cluster name: NATS
// forbids spaces; dots, dashes and underscores are common in host names.
var natsName = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// validateCluster checks nats.embedded.server_name and
// nats.embedded.cluster, and gives lock.replicas its cluster default when
// the file does not set it.
func (d *decoder) validateCluster(c *Config) {
	e := &c.NATS.Embedded
	d.check(e.ServerName != "" && !natsName.MatchString(e.ServerName), "nats.embedded.server_name", nil,
		"invalid server name %s: use letters, digits, '_', '-' and '.'", quote(e.ServerName))
	cl := e.Cluster
	if !cl.InUse() {
		d.check(d.set["nats.embedded.cluster.name"], "nats.embedded.cluster.name", nil,
			"has no effect without nats.embedded.cluster.listen and routes")
		d.checkReplicasFit(c, 1)
		return
	}
	if cl.Name == "" {
		cl.Name, e.Cluster.Name = DefaultClusterName, DefaultClusterName
	}
	d.check(c.NATS.URL != "", "nats.embedded.cluster", []string{"nats.url"},
		"requires nats.url to be empty: the cluster is formed by the embedded servers")
	d.check(!natsName.MatchString(cl.Name), "nats.embedded.cluster.name", nil,
		"invalid cluster name %s: use letters, digits, '_', '-' and '.'", quote(cl.Name))
	switch {
	case cl.Listen == "":
		d.check(true, "nats.embedded.cluster.listen", nil,
			"is required with nats.embedded.cluster.routes: the host:port the other nodes' routes point at (e.g. \"0.0.0.0:6222\")")
	default:
		d.checkListen("nats.embedded.cluster.listen", cl.Listen)
		_, port, _ := net.SplitHostPort(cl.Listen)
		d.check(port == "0", "nats.embedded.cluster.listen", nil,
			"needs a fixed port, not 0: the other nodes' routes point at it")
	}
	d.check(d.written("nats.embedded.cluster.routes") < minClusterRoutes, "nats.embedded.cluster.routes", []string{"nats.embedded.cluster.listen"},
		"must list the route URLs of the other nodes, at least %d (e.g. \"nats://10.0.0.2:6222\"): "+
			"a JetStream cluster keeps working after losing one node of three, not one of two; got %d",
		minClusterRoutes, d.written("nats.embedded.cluster.routes"))
	for i, r := range cl.Routes {
		d.checkRoute(fmt.Sprintf("nats.embedded.cluster.routes[%d]", i), r)
	}
	if !d.set["lock.replicas"] && cl.Nodes() >= ClusterReplicas {
		c.Lock.Replicas = ClusterReplicas
	}
	d.checkReplicasFit(c, cl.Nodes())
}

// checkRoute validates one route URL: nats:// or nats-route://, a host and
// a port, nothing else.
func (d *decoder) checkRoute(path, route string) {
	u, err := url.Parse(route)
	bad := err != nil || (u.Scheme != "nats" && u.Scheme != "nats-route") || u.Hostname() == "" ||
		u.Port() == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil
	if !bad {
		_, err = strconv.ParseUint(u.Port(), 10, 16)
		bad = err != nil
	}
	d.check(bad, path, nil, "invalid route %s: want nats://host:port of another node's cluster.listen (e.g. \"nats://10.0.0.2:6222\")",
		quote(route))
}

// checkReplicasFit rejects a lock.replicas that the embedded server's nodes
// cannot hold: JetStream would refuse to place the buckets, for ever.
func (d *decoder) checkReplicasFit(c *Config, nodes int) {
	if c.NATS.URL != "" {
		return
	}
	d.check(c.Lock.Replicas > nodes && c.Lock.Replicas <= maxReplicas, "lock.replicas", nil,
		"is %d, but the embedded NATS has %d node(s) to hold the copies: lower it, or configure nats.embedded.cluster "+
			"with enough nodes (or set nats.url to a JetStream cluster)", c.Lock.Replicas, nodes)
}

// written is the number of entries of the list at path in the file, those
// with an error included.
func (d *decoder) written(path string) int {
	n := 0
	for d.lines[fmt.Sprintf("%s[%d]", path, n)] > 0 {
		n++
	}
	return n
}
