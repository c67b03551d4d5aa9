package app

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/config"
	"github.com/cronlock/cronlock/internal/natstest"
)

// TestIgnoreDiscoveredServers: in a 2-node cluster whose node b advertises
// an address clients cannot reach (as behind a proxy), a client of node a
// learns that address, unless nats.ignore_discovered_servers is set: then
// the pool of the operator's and the daemon's connection holds only the
// configured URL.
func TestIgnoreDiscoveredServers(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	routePort := l.Addr().(*net.TCPAddr).Port
	l.Close()
	a := natstest.RunServer(t, natstest.Options{Configure: func(o *server.Options) {
		o.ServerName, o.JetStream = "a", false
		o.Cluster = server.ClusterOpts{Name: "c", Host: "127.0.0.1", Port: routePort}
	}})
	b := natstest.RunServer(t, natstest.Options{Configure: func(o *server.Options) {
		o.ServerName, o.JetStream = "b", false
		o.Cluster = server.ClusterOpts{Name: "c", Host: "127.0.0.1", Port: server.RANDOM_PORT}
		o.Routes = server.RoutesFromStr(fmt.Sprintf("nats-route://127.0.0.1:%d", routePort))
		o.ClientAdvertise = "unreachable.invalid:4222"
	}})
	const advertised = "nats://unreachable.invalid:4222"
	within(t, 20*time.Second, "the cluster formed", func() bool { return a.NumRoutes() > 0 && b.NumRoutes() > 0 })

	cfg := config.NATS{URL: a.ClientURL(), Name: "discovery-test"}
	plain, err := dialURL(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	within(t, 20*time.Second, "the client learns node b's advertised address", func() bool {
		return slices.Contains(plain.NC.DiscoveredServers(), advertised)
	})

	cfg.IgnoreDiscoveredServers = true
	operator, err := dialURL(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer operator.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	daemon, err := dialRetrying(ctx, cfg, zerolog.Nop(), func(error) {})
	if err != nil {
		t.Fatal(err)
	}
	defer daemon.Close()
	if err := daemon.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	// Both connected after the plain client learned b's address, so the
	// INFO naming it reached them too.
	for name, c := range map[string]*Conn{"operator": operator, "daemon": daemon} {
		if got := c.NC.Servers(); !slices.Equal(got, []string{a.ClientURL()}) {
			t.Errorf("%s connection's server pool = %q, want only %s", name, got, a.ClientURL())
		}
	}
}

// within polls cond every 20 ms until it holds or d passes.
func within(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDaemonDialGivesUpOnBadCredentials: retrying forever is for a server
// that is not there; a server that rejects the credentials ends the wait
// with the server's error, so that `cronlock run` exits non-zero.
func TestDaemonDialGivesUpOnBadCredentials(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t, natstest.Options{Configure: func(o *server.Options) {
		o.Username, o.Password = "cronlock", "right"
	}})
	cfg := config.NATS{URL: srv.ClientURL(), Name: "auth-test", User: "cronlock", Password: "wrong"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := dialRetrying(ctx, cfg, zerolog.Nop(), func(error) {})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.WaitConnected(ctx)
	if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "uthorization") {
		t.Fatalf("WaitConnected with a wrong password = %v, want the authorization error before the deadline", err)
	}
}
