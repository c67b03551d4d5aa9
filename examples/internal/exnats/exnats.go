// Package exnats gives the examples their NATS: the servers at a URL, or an
// in-process nats-server with JetStream so that an example runs with no
// setup. Real programs connect to their NATS cluster instead of embedding
// one; see examples/deploy.
package exnats

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// NATS is where the example's connections go.
type NATS struct {
	url string         // used when srv is nil
	srv *server.Server // the embedded server, or nil
	dir string         // its JetStream store, removed by Close
}

// Start returns the servers at url, or, if embedded, starts an in-process
// JetStream server with its store in a new temporary directory. Call Close
// when done.
func Start(url string, embedded bool) (*NATS, error) {
	if !embedded {
		return &NATS{url: url}, nil
	}
	dir, err := os.MkdirTemp("", "cronlock-example-")
	if err != nil {
		return nil, err
	}
	srv, err := server.NewServer(&server.Options{
		ServerName: "embedded",
		JetStream:  true,
		StoreDir:   dir,
		// No TCP listener: clients connect in-process, so the example needs
		// no free port and cannot clash with a real server on 4222.
		DontListen: true,
		NoSigs:     true, // signals belong to the example, not the server
		NoLog:      true,
	})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("embedded nats-server: %w", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		os.RemoveAll(dir)
		return nil, errors.New("embedded nats-server: not ready within 10s")
	}
	return &NATS{srv: srv, dir: dir}, nil
}

// Connect opens a connection named name (the name shows in the server's
// connection list, which helps tell replicas apart).
func (n *NATS) Connect(name string) (*nats.Conn, jetstream.JetStream, error) {
	opts := []nats.Option{
		nats.Name(name),
		// Keep reconnecting for as long as the process lives: a lease that
		// cannot be renewed is given up by the lock's own local deadline,
		// so there is nothing to gain from giving up on the connection.
		nats.MaxReconnects(-1),
	}
	url := n.url
	if n.srv != nil {
		opts = append(opts, nats.InProcessServer(n.srv))
		url = "" // ignored for in-process connections
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("connect to NATS %s: %w", n, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}

// String names the servers, for logs.
func (n *NATS) String() string {
	if n.srv != nil {
		return "embedded (in-process)"
	}
	return n.url
}

// Close shuts down the embedded server, if any, and removes its store. Close
// the connections first.
func (n *NATS) Close() {
	if n.srv == nil {
		return
	}
	n.srv.Shutdown()
	n.srv.WaitForShutdown()
	os.RemoveAll(n.dir)
}
