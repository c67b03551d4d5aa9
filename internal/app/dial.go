package app

import (
	"errors"
	"fmt"
	"net"

	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/config"
)

// productionHint is logged once when the daemon starts its embedded server.
const productionHint = "embedded single-node NATS server: fine to try cronlock out, not for production " +
	"(one host, no replication: locks and history live and die with this process's store). " +
	"For production run three cronlock processes with nats.embedded.cluster, or set nats.url to a 3-node JetStream cluster " +
	"and lock.replicas to 3; see the README's production section"

// dialEmbedded starts the daemon's embedded server (locking its store) and
// connects to it in-process. Its errors (the store in use, a port taken)
// are final: retrying would not help. The daemon reaches nats.url with
// dialRetrying instead.
func dialEmbedded(cfg config.NATS, log zerolog.Logger) (*Conn, error) {
	e, err := startEmbedded(cfg.Embedded, log)
	if errors.Is(err, ErrStoreInUse) {
		return nil, fmt.Errorf("%w. To run a second replica, share the "+
			"first one's server: set nats.embedded.listen on the first (e.g. \"127.0.0.1:4222\") and "+
			"nats.url here to it (\"nats://127.0.0.1:4222\"). A store_dir of its own would not help: "+
			"replicas on separate stores do not coordinate, and each would run every tick", err)
	}
	if err != nil {
		return nil, err
	}
	logEmbedded(log, cfg.Embedded, e)
	warnEmbeddedOpen(log, cfg.Embedded)
	c, err := dialInProcess(cfg, e, log)
	if err != nil {
		e.shutdown()
		return nil, err
	}
	return c, nil
}

// dialOperator connects an operator command (locks, status, trigger,
// unlock): to nats.url if set; else to the embedded server of a daemon on
// this host at nats.embedded.listen, if something answers there; else to an
// embedded server of its own on store_dir, which only works while no daemon
// holds that store, and only if a daemon made one there (ErrNoStore).
func dialOperator(cfg config.NATS, log zerolog.Logger) (*Conn, error) {
	if cfg.URL != "" {
		return dialURL(cfg, log)
	}
	listen := cfg.Embedded.Listen
	var listenErr error
	if listen != "" {
		local := cfg
		local.URL = "nats://" + connectAddr(listen)
		if cfg.Embedded.Auth.InUse() {
			local.Token = cfg.Embedded.Auth.Token // config allows no other method beside it
		}
		c, err := dialURL(local, log)
		if err == nil {
			return c, nil
		}
		listenErr = err
		log.Debug().Err(err).Msg("no embedded server answers at nats.embedded.listen; opening the store")
	}
	if cfg.Embedded.Cluster.InUse() {
		return nil, clusterOperatorError(listen, listenErr)
	}
	if err := checkStore(cfg.Embedded.StoreDir); err != nil {
		return nil, err
	}
	e, err := startEmbedded(config.Embedded{StoreDir: cfg.Embedded.StoreDir, ServerName: cfg.Embedded.ServerName}, log)
	switch {
	case errors.Is(err, ErrStoreInUse) && listenErr != nil:
		return nil, fmt.Errorf("%w, and its server does not answer at nats.embedded.listen %q: %w", err, listen, listenErr)
	case errors.Is(err, ErrStoreInUse):
		return nil, fmt.Errorf("%w (a running `cronlock run`?): set nats.embedded.listen (e.g. \"127.0.0.1:4222\") "+
			"in the config and restart it, so that operator commands can connect to its embedded server", err)
	case err != nil:
		return nil, err
	}
	c, err := dialInProcess(cfg, e, log)
	if err != nil {
		e.shutdown()
		return nil, err
	}
	return c, nil
}

// connectAddr turns a listen address into one to dial: an empty or
// unspecified host ("":4222, "0.0.0.0:4222", "[::]:4222") means this host.
func connectAddr(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}
