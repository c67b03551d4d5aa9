package app_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"github.com/cronlock/cronlock/internal/testlog"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cronlock/cronlock/internal/app"
	"github.com/cronlock/cronlock/internal/config"
	"github.com/cronlock/cronlock/internal/natstest"
)

// reservePort returns a loopback port that was free a moment ago.
func reservePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestJetStreamDomain runs a replica connected to a leaf node whose own
// JetStream (domain "leaf") is not the one holding the buckets: with
// nats.jetstream.domain "hub" the buckets are created on the hub, jobs run
// (acquire, renew, watch and history through the leaf connection), and an
// operator command reads the lock bucket there.
func TestJetStreamDomain(t *testing.T) {
	t.Parallel()
	leafPort := reservePort(t)
	hub := natstest.RunServer(t, natstest.Options{Configure: func(o *server.Options) {
		o.ServerName, o.JetStreamDomain = "hub", "hub"
		o.LeafNode.Host, o.LeafNode.Port = "127.0.0.1", leafPort
	}})
	leaf := natstest.RunServer(t, natstest.Options{Configure: func(o *server.Options) {
		o.ServerName, o.JetStreamDomain = "leaf", "leaf"
		o.LeafNode.Remotes = []*server.RemoteLeafOpts{{URLs: []*url.URL{{Scheme: "nats-leaf", Host: fmt.Sprintf("127.0.0.1:%d", leafPort)}}}}
	}})
	waitFor(t, 20*time.Second, "the leaf node connected to the hub", func() bool { return hub.NumLeafNodes() == 1 })

	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	cfg := writeConfig(t, dir, fmt.Sprintf(`
nats:
  url: %s
  jetstream: {domain: hub}
lock: {lease: 2s, renew: 500ms}
http: {listen: ""}
log: {level: debug}
jobs:
  - name: domain.job
    schedule: "* * * * * *"
    shell: echo ran >> %s; sleep 1
`, leaf.ClientURL(), yamlQuote(out)))
	logs := &testlog.Buffer{}
	_, stop := startDaemon(t, cfg, logs)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs:\n%s", logs)
		}
	})
	waitFor(t, 20*time.Second, "two runs through the leaf node", func() bool { return len(lines(t, out)) >= 2 })

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := app.Dial(ctx, cfg, newLogger(t, logs))
	if err != nil {
		t.Fatalf("Dial through the leaf node: %v", err)
	}
	if h, err := cl.History(ctx, 1); err != nil || len(h) != 1 || len(h[0].Runs) == 0 {
		t.Errorf("History through the leaf node = %v, %v; want the job's runs", h, err)
	}
	waitFor(t, 10*time.Second, "the running job's lock listed through the leaf node", func() bool {
		held, err := cl.Locks(ctx)
		return err == nil && len(held) == 1 && held[0].Key == "domain.job"
	})
	cl.Close()
	stop()

	// The same JetStream named by its API prefix instead: a trigger takes
	// the lock and records the run on the hub.
	byPrefix := *cfg
	byPrefix.NATS.JetStream = config.JetStream{APIPrefix: "$JS.hub.API"}
	cl, err = app.Dial(ctx, &byPrefix, newLogger(t, logs))
	if err != nil {
		t.Fatalf("Dial with nats.jetstream.api_prefix: %v", err)
	}
	before := len(lines(t, out))
	if err := cl.Trigger(ctx, "domain.job"); err != nil {
		t.Errorf("Trigger with nats.jetstream.api_prefix: %v", err)
	}
	if len(lines(t, out)) != before+1 {
		t.Errorf("the triggered run did not run")
	}
	cl.Close()

	_, hubJS := natstest.Connect(t, hub.ClientURL())
	for _, b := range []string{"locks", "cronlock_history"} {
		if _, err := hubJS.KeyValue(ctx, b); err != nil {
			t.Errorf("bucket %s on the hub: %v", b, err)
		}
	}
	_, leafJS := natstest.Connect(t, leaf.ClientURL())
	if _, err := leafJS.KeyValue(ctx, "locks"); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Errorf("bucket locks in the leaf's own JetStream: %v, want ErrBucketNotFound", err)
	}
	noViolations(t, logs)
}

// testCA is a certificate authority made for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "cronlock test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// serverCert issues a server certificate for the DNS name only (no IP).
func (ca *testCA) serverCert(t *testing.T, name string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestTLSServerName: a server whose certificate names nats.cronlock.test,
// reached at 127.0.0.1, is accepted with nats.tls.server_name set to that
// name (operator command and daemon), and rejected without it.
func TestTLSServerName(t *testing.T) {
	t.Parallel()
	const name = "nats.cronlock.test"
	ca := newTestCA(t)
	srv := natstest.RunServer(t, natstest.Options{Configure: func(o *server.Options) {
		o.TLS, o.TLSTimeout = true, 5
		o.TLSConfig = &tls.Config{Certificates: []tls.Certificate{ca.serverCert(t, name)}, MinVersion: tls.VersionTLS12}
	}})
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, ca.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	yaml := func(serverName string) string {
		return fmt.Sprintf(`
nats:
  url: nats://127.0.0.1:%d
  tls: {ca_file: %s, server_name: %q}
lock: {lease: 2s, renew: 500ms}
http: {listen: ""}
jobs: [{name: tls.job, schedule: "* * * * * *", shell: "true"}]
`, srv.Addr().(*net.TCPAddr).Port, yamlQuote(caFile), serverName)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	logs := &testlog.Buffer{}

	_, err := app.Dial(ctx, writeConfig(t, dir, yaml("")), newLogger(t, logs))
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("Dial by IP without server_name = %v, want a certificate error", err)
	}

	cfg := writeConfig(t, dir, yaml(name))
	cl, err := app.Dial(ctx, cfg, newLogger(t, logs))
	if err != nil {
		t.Fatalf("Dial with server_name %s: %v", name, err)
	}
	if _, err := cl.Locks(ctx); err != nil {
		t.Errorf("Locks: %v", err)
	}
	cl.Close()
	d, _ := startDaemon(t, cfg, logs)
	waitFor(t, 20*time.Second, "the daemon ready over TLS", d.Ready)
}
