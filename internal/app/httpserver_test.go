package app_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"github.com/cronlock/cronlock/internal/testlog"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
)

// selfSigned writes a certificate for 127.0.0.1 and cronlock.test and its
// key into dir, and returns a pool trusting it.
func selfSigned(t *testing.T, dir string) *x509.CertPool {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "cronlock.test"},
		DNSNames:     []string{"cronlock.test"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, typ string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("cert.pem", "CERTIFICATE", der)
	write("key.pem", "EC PRIVATE KEY", kb)
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return pool
}

// TestHTTPTransport: with http.tls, http.allowed_hosts and
// http.metrics_listen, both listeners serve HTTPS; a request naming a host
// not allowed is refused with 421 (logged once per client), its own
// address and the allowed name are served; the metrics listener serves
// /metrics alone; and the server's own error lines (a TLS handshake that
// fails) are JSON lines of the daemon's log.
func TestHTTPTransport(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t, natstest.Options{})
	dir := t.TempDir()
	pool := selfSigned(t, dir)
	cfg := writeConfig(t, dir, fmt.Sprintf(`
nats: {url: %s}
http:
  listen: "127.0.0.1:0"
  metrics_listen: "127.0.0.1:0"
  tls: {cert_file: cert.pem, key_file: key.pem}
  allowed_hosts: [cronlock.test]
config_watch: false
jobs:
  - name: tls.job
    schedule: "0 0 1 1 *"
    shell: "true"
`, srv.ClientURL()))
	logs := &testlog.Buffer{}
	d, _ := startDaemon(t, cfg, logs)
	main, metrics := d.HTTPAddr().String(), d.MetricsAddr().String()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	do := func(addr, host, path string) (int, string) {
		t.Helper()
		req, err := http.NewRequest("GET", "https://"+addr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s (Host %q): %v", req.URL, host, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	_, port, _ := net.SplitHostPort(main)
	for _, c := range []struct {
		addr, host, path string
		code             int
	}{
		{main, "", "/healthz", 200},                      // its own address
		{main, "cronlock.test:" + port, "/healthz", 200}, // the allowed name
		{main, "CRONLOCK.TEST", "/metrics", 200},
		{main, "evil.example:" + port, "/api/jobs", 421}, // DNS rebinding
		{main, "evil.example", "/healthz", 421},
		{metrics, "", "/metrics", 200},
		{metrics, "", "/healthz", 404},
		{metrics, "", "/", 404},
		{metrics, "evil.example", "/metrics", 421},
	} {
		if code, body := do(c.addr, c.host, c.path); code != c.code {
			t.Errorf("GET %s%s Host %q = %d %q, want %d", c.addr, c.path, c.host, code, body, c.code)
		}
	}
	if _, body := do(metrics, "", "/metrics"); !strings.Contains(body, "cronlock_http_connections_max") {
		t.Errorf("/metrics lacks cronlock_http_connections_max")
	}
	if n := strings.Count(logs.String(), `not in http.allowed_hosts`); n != 1 {
		t.Errorf("%d log lines about refused hosts from one client, want 1:\n%s", n, logs)
	}

	// Plain HTTP to the TLS port is answered 400; bytes that are no
	// handshake at all are logged by the server, as JSON.
	if code, _ := fetchPlain(t, "http://"+main+"/healthz"); code != http.StatusBadRequest {
		t.Errorf("plain HTTP to the TLS listener: %d, want 400", code)
	}
	c, err := net.Dial("tcp", main)
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("\x16\x03\x01\x00\x05hello, not a TLS hello\r\n\r\n"))
	io.Copy(io.Discard, c)
	c.Close()
	waitFor(t, 10*time.Second, "the TLS handshake error in the log", func() bool {
		return strings.Contains(logs.String(), "TLS handshake error")
	})
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var e map[string]any
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Errorf("log line is not JSON: %q", line)
			continue
		}
		if msg, _ := e["message"].(string); strings.Contains(msg, "TLS handshake error") && (e["component"] != "http" || e["level"] != "warn") {
			t.Errorf("handshake error logged as %v, want component http at warn", e)
		}
	}
}

// fetchPlain is a GET without TLS, returning the status code.
func fetchPlain(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestHTTPConnectionLimitKeepsHealthz: with http.max_connections 8 held by
// clients that connected and sent nothing (slowloris), a new client still
// gets /healthz at once: at the limit the oldest silent connection makes
// room, and the connection gauge never passes the limit.
func TestHTTPConnectionLimitKeepsHealthz(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t, natstest.Options{})
	dir := t.TempDir()
	cfg := writeConfig(t, dir, fmt.Sprintf(`
nats: {url: %s}
http: {listen: "127.0.0.1:0", max_connections: 8}
config_watch: false
jobs:
  - name: limit.job
    schedule: "0 0 1 1 *"
    shell: "true"
`, srv.ClientURL()))
	d, _ := startDaemon(t, cfg, &testlog.Buffer{})
	addr := d.HTTPAddr().String()
	var silent []net.Conn
	defer func() {
		for _, c := range silent {
			c.Close()
		}
	}()
	for range 20 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		silent = append(silent, c)
	}
	// Until the silent ones are newConnGrace old, a new connection finds
	// every slot taken by a client that may still send its request and is
	// refused; after that, it takes the oldest one's place.
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	healthz := func() bool {
		resp, err := client.Get("http://" + addr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	// Well before the 10 s header timeout closes them anyway.
	waitFor(t, 5*time.Second, "/healthz with the limit held by silent clients", healthz)
	for i := range 3 {
		if !healthz() {
			t.Fatalf("/healthz #%d after the first: failed", i)
		}
	}
	resp, err := client.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"cronlock_http_connections_max 8", `cronlock_http_connections_shed_total{reason="evicted"}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	m := regexp.MustCompile(`(?m)^cronlock_http_connections (\d+)$`).FindStringSubmatch(string(b))
	if m == nil {
		t.Fatalf("/metrics lacks cronlock_http_connections")
	}
	if n, _ := strconv.Atoi(m[1]); n > 8 {
		t.Errorf("cronlock_http_connections = %d, want at most 8", n)
	}
}
