package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/config"
)

// routeErrorReports: a failed reconnect to a route is logged at the first
// attempt and at every routeErrorReports-th, about once a minute.
const routeErrorReports = 60

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
	// A node that is down is retried every second; report it once a
	// minute, not at every attempt (nats-server's default).
	opts.ReconnectErrorReports = routeErrorReports
	// Every write is on disk before a majority acknowledges it, as
	// examples/deploy's servers do: with JetStream's default (fsync every
	// two minutes) two nodes losing power together could forget a granted
	// lock. cronlock writes a few small messages per run.
	opts.SyncAlways = true
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

// Start-up of a cluster node: JetStream API requests sent before the meta
// group has a leader go unanswered until jsapi.Attempt, so the daemon
// waits for one, polling its node, before opening the buckets.
const (
	stageCluster    = "waiting for a majority of the cluster's nodes (no JetStream meta leader yet)"
	metaLeaderPoll  = 50 * time.Millisecond
	metaLeaderQuiet = 5 * time.Second // waits shorter than this are not logged
)

// waitCluster waits, when c's embedded server is a cluster node, until its
// JetStream meta group has a leader and this node is current with it: a
// majority of the nodes is connected. It returns ctx's error if ctx ends
// first; without a cluster it returns nil at once.
func (d *Daemon) waitCluster(ctx context.Context, c *Conn) error {
	if c.embedded == nil || !d.cfg.NATS.Embedded.Cluster.InUse() {
		return nil
	}
	srv := c.embedded.srv
	start := time.Now()
	t := time.NewTicker(metaLeaderPoll)
	defer t.Stop()
	for !srv.JetStreamIsCurrent() {
		d.setStage(stageCluster)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	if waited := time.Since(start); waited >= metaLeaderQuiet {
		d.log.Info().Float64("waited_seconds", waited.Seconds()).Msg("the JetStream cluster has a meta leader")
	}
	return nil
}
