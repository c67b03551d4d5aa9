package app

import (
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/config"
)

// standaloneName is the embedded server's name without a cluster when
// nats.embedded.server_name is empty.
const standaloneName = "cronlock-embedded"

// serverName is the embedded server's NATS server name: server_name if
// set; else, in a cluster, "<host name>-<route port>", stable across
// restarts and distinct for nodes on one host; else standaloneName.
func serverName(e config.Embedded) string {
	if e.ServerName != "" {
		return e.ServerName
	}
	if !e.Cluster.InUse() {
		return standaloneName
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "cronlock"
	}
	host, _, _ = strings.Cut(host, ".")
	_, port, _ := net.SplitHostPort(e.Cluster.Listen)
	return nameUnsafe.ReplaceAllString(host, "_") + "-" + port
}

// nameUnsafe matches what config does not accept in a server name.
var nameUnsafe = regexp.MustCompile(`[^A-Za-z0-9_.-]`)

// configureCluster makes opts a node of the cluster c: its route listener,
// the routes to the other nodes, and the cluster name, which with the
// server name is what JetStream clustering needs. Nodes find each other
// and keep retrying the routes themselves; the meta group elects a leader
// once a majority is connected.
func configureCluster(opts *server.Options, c config.Cluster) error {
	host, port, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return fmt.Errorf("nats.embedded.cluster.listen %q: %w", c.Listen, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return fmt.Errorf("nats.embedded.cluster.listen %q: bad port: %w", c.Listen, err)
	}
	opts.Cluster = server.ClusterOpts{Name: c.Name, Host: host, Port: p}
	opts.Routes = server.RoutesFromStr(strings.Join(c.Routes, ","))
	if len(opts.Routes) != len(c.Routes) {
		return fmt.Errorf("nats.embedded.cluster.routes %q: not all are URLs", c.Routes)
	}
	return nil
}

// logEmbedded says what the daemon's embedded server is: a node of a
// cluster (info), or a single node, which is not for production (warn).
func logEmbedded(log zerolog.Logger, e config.Embedded, srv *embeddedServer) {
	if !e.Cluster.InUse() {
		ev := log.Warn().Str("store_dir", e.StoreDir)
		if u := srv.ClientURL(); u != "" {
			ev = ev.Str("listen", u)
		}
		ev.Msg(productionHint)
		return
	}
	ev := log.Info().Str("store_dir", e.StoreDir).Str("server_name", srv.srv.Name()).
		Str("cluster", e.Cluster.Name).Str("cluster_listen", e.Cluster.Listen).
		Strs("routes", e.Cluster.Routes).Int("nodes", e.Cluster.Nodes())
	if u := srv.ClientURL(); u != "" {
		ev = ev.Str("listen", u)
	}
	ev.Msg("embedded NATS server is a node of a JetStream cluster; jobs start once a majority of its nodes are connected")
}

// clusterOperatorError is why an operator command in cluster mode does not
// open the store itself: a node started on it alone would be a second,
// short-lived member of the cluster under this node's name (or, without
// the cluster options, a standalone server on a clustered store).
func clusterOperatorError(listen string, listenErr error) error {
	if listen == "" {
		return errors.New("nats.embedded.cluster is set but nats.embedded.listen is empty: operator commands reach " +
			"the cluster through a node's client port; set nats.embedded.listen (e.g. \"127.0.0.1:4222\") and restart `cronlock run`")
	}
	return fmt.Errorf("no `cronlock run` answers at nats.embedded.listen %q (%w): operator commands of a cluster node "+
		"connect to its running server; start it, or set nats.url to another node's client port", listen, listenErr)
}
