package config

import (
	"fmt"
	"net"
	"strings"
	"time"
)

// HTTPTransport is what protects the daemon's HTTP listeners (http.listen
// and http.metrics_listen) from slow, idle and misdirected clients. Its keys
// are written directly under http:.
type HTTPTransport struct {
	// MetricsListen is a host:port on which /metrics alone is served, so
	// that Prometheus can scrape an address the page and the API are not
	// on. Default "": none (http.listen serves /metrics either way). Must
	// differ from http.listen.
	MetricsListen string `yaml:"metrics_listen"`
	// TLS serves both listeners over HTTPS when set.
	TLS HTTPTLS `yaml:"tls"`
	// AllowedHosts, when the key is written, refuses (421) every request
	// whose Host header names neither one of these hosts nor the address
	// the request came in on (an IP literal equal to the connection's local
	// address, or "localhost" on a loopback connection): a web page whose
	// name an attacker rebinds to 127.0.0.1 (DNS rebinding) cannot read
	// the page or the API. Host names or IP addresses, without a port
	// (the request's port is ignored), compared ignoring case. Nil (the
	// default): any Host is served. An empty list allows only the address.
	AllowedHosts []string `yaml:"allowed_hosts"`
	// ReadTimeout bounds reading one request, headers and body. Default
	// DefaultHTTPReadTimeout; > 0 and at most MaxHTTPTimeout.
	ReadTimeout Duration `yaml:"read_timeout"`
	// WriteTimeout bounds writing one response, from the end of its
	// request's headers. Default DefaultHTTPWriteTimeout; > 0 and at most
	// MaxHTTPTimeout.
	WriteTimeout Duration `yaml:"write_timeout"`
	// IdleTimeout is how long a keep-alive connection may wait for its
	// next request before the server closes it. Default
	// DefaultHTTPIdleTimeout; > 0 and at most MaxHTTPTimeout.
	IdleTimeout Duration `yaml:"idle_timeout"`
	// MaxConnections bounds the HTTP connections open at once, both
	// listeners together. Default 0: DefaultHTTPMaxConnections. Either way
	// the daemon lowers it, with a warning, to what its open-file limit
	// allows next to the descriptors it keeps for jobs and NATS. >= 0.
	MaxConnections int `yaml:"max_connections"`
}

// HTTPTLS names the certificate the HTTP listeners serve. CertFile and
// KeyFile (PEM) are both set or both empty; empty (the default) serves plain
// HTTP. Relative paths are relative to the file's folder.
type HTTPTLS struct {
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
}

// Defaults and bounds of HTTPTransport.
const (
	// DefaultHTTPReadTimeout: the page and the API read no request body
	// beyond a few bytes, so a request that takes longer is a slow client.
	DefaultHTTPReadTimeout = Duration(15 * time.Second)
	// DefaultHTTPWriteTimeout leaves a loaded replica time to render the
	// API of many jobs to a slow link.
	DefaultHTTPWriteTimeout = Duration(60 * time.Second)
	// DefaultHTTPIdleTimeout is well above the page's 1 s poll, so an open
	// page keeps its connection.
	DefaultHTTPIdleTimeout = Duration(30 * time.Second)
	// DefaultHTTPMaxConnections is far more than the browsers, probes and
	// scrapers of a replica use.
	DefaultHTTPMaxConnections = 1024
	// MaxHTTPTimeout bounds the HTTP timeouts: a longer one protects
	// nothing.
	MaxHTTPTimeout = Duration(time.Hour)
)

func defaultHTTPTransport() HTTPTransport {
	return HTTPTransport{
		ReadTimeout:  DefaultHTTPReadTimeout,
		WriteTimeout: DefaultHTTPWriteTimeout,
		IdleTimeout:  DefaultHTTPIdleTimeout,
	}
}

// validateHTTPTransport checks the keys of HTTPTransport.
func (d *decoder) validateHTTPTransport(h HTTP) {
	t := h.HTTPTransport
	if t.MetricsListen != "" {
		d.checkListen("http.metrics_listen", t.MetricsListen)
		d.check(t.MetricsListen == h.Listen && !strings.HasSuffix(h.Listen, ":0"), "http.metrics_listen", []string{"http.listen"},
			"must differ from http.listen (both are %s); leave it out to scrape /metrics on http.listen", quote(h.Listen))
	}
	d.check(t.TLS.CertFile != "" && t.TLS.KeyFile == "", "http.tls.key_file", []string{"http.tls.cert_file"},
		"is required when http.tls.cert_file is set")
	d.check(t.TLS.CertFile == "" && t.TLS.KeyFile != "", "http.tls.cert_file", []string{"http.tls.key_file"},
		"is required when http.tls.key_file is set")
	none := h.Listen == "" && t.MetricsListen == ""
	d.check(none && t.TLS.CertFile != "", "http.tls", nil, "has no effect: http.listen and http.metrics_listen are empty")
	d.check(none && t.AllowedHosts != nil, "http.allowed_hosts", nil,
		"has no effect: http.listen and http.metrics_listen are empty")
	for i, host := range t.AllowedHosts {
		d.checkAllowedHost(i, host)
	}
	for _, k := range []struct {
		path string
		v    Duration
	}{{"http.read_timeout", t.ReadTimeout}, {"http.write_timeout", t.WriteTimeout}, {"http.idle_timeout", t.IdleTimeout}} {
		d.check(k.v == 0, k.path, nil, "must be greater than 0 (a connection without it is held by a slow client for ever)")
		d.check(k.v > MaxHTTPTimeout, k.path, nil, "must be at most %s, got %s", MaxHTTPTimeout, k.v)
	}
	d.check(t.MaxConnections < 0, "http.max_connections", nil,
		"must not be negative (0: the default, %d), got %d", DefaultHTTPMaxConnections, t.MaxConnections)
}

// checkAllowedHost checks the i-th entry of http.allowed_hosts: a host name
// or IP address without scheme, port or path.
func (d *decoder) checkAllowedHost(i int, host string) {
	path := fmt.Sprintf("http.allowed_hosts[%d]", i)
	_, _, portErr := net.SplitHostPort(host)
	switch {
	case strings.TrimSpace(host) == "":
		d.check(true, path, nil, "must not be empty")
	case strings.ContainsAny(host, "/@ \t*"):
		d.check(true, path, nil, "invalid host %s: write a host name or IP address such as \"cronlock.example.com\", "+
			"without scheme, path or wildcard", quote(host))
	case portErr == nil:
		d.check(true, path, nil, "invalid host %s: write it without the port (any port of an allowed host is allowed)",
			quote(host))
	}
}
