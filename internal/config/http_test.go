package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestHTTPTransportKeys: the listener keys decode under http:, have their
// defaults when absent, and bad values are errors naming the key and line.
func TestHTTPTransportKeys(t *testing.T) {
	t.Parallel()
	cfg, err := Parse("/etc/cronlock/c.yaml", []byte(`http:
  listen: "127.0.0.1:8736"
  metrics_listen: ":9736"
  tls: {cert_file: tls/cert.pem, key_file: /keys/key.pem}
  allowed_hosts: [cronlock.example.com, "10.0.0.5"]
  read_timeout: 5s
  idle_timeout: 1m
  max_connections: 200
`+job0))
	if err != nil {
		t.Fatal(err)
	}
	h := cfg.HTTP.HTTPTransport
	want := HTTPTransport{
		MetricsListen: ":9736",
		TLS:           HTTPTLS{CertFile: "/etc/cronlock/tls/cert.pem", KeyFile: "/keys/key.pem"},
		AllowedHosts:  []string{"cronlock.example.com", "10.0.0.5"},
		ReadTimeout:   Duration(5 * time.Second), WriteTimeout: DefaultHTTPWriteTimeout,
		IdleTimeout: Duration(time.Minute), MaxConnections: 200,
	}
	if !reflect.DeepEqual(h, want) {
		t.Errorf("decoded %+v\nwant    %+v", h, want)
	}

	for _, c := range []struct{ yaml, want string }{
		{"  metrics_listen: nine\n", "c.yaml:3: http.metrics_listen: invalid listen address"},
		{"  metrics_listen: \"127.0.0.1:8736\"\n", "c.yaml:3: http.metrics_listen: must differ from http.listen"},
		{"  tls: {cert_file: c.pem}\n", "c.yaml:3: http.tls.key_file: is required when http.tls.cert_file is set"},
		{"  tls: {key_file: k.pem}\n", "c.yaml:3: http.tls.cert_file: is required when http.tls.key_file is set"},
		{"  allowed_hosts: [\"a.example:8736\"]\n", "c.yaml:3: http.allowed_hosts[0]: invalid host \"a.example:8736\": write it without the port"},
		{"  allowed_hosts: [\"https://a.example\"]\n", "c.yaml:3: http.allowed_hosts[0]: invalid host"},
		{"  allowed_hosts: [\"\"]\n", "c.yaml:3: http.allowed_hosts[0]: must not be empty"},
		{"  read_timeout: 0s\n", "c.yaml:3: http.read_timeout: must be greater than 0"},
		{"  write_timeout: 2h\n", "c.yaml:3: http.write_timeout: must be at most 1h0m0s, got 2h0m0s"},
		{"  idle_timeout: 10\n", "c.yaml:3: http.idle_timeout: a bare number is not a duration"},
		{"  max_connections: -1\n", "c.yaml:3: http.max_connections: must not be negative"},
	} {
		_, err := Parse("c.yaml", []byte("http:\n  listen: \"127.0.0.1:8736\"\n"+c.yaml+job0))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.yaml, err, c.want)
		}
	}
	_, err = Parse("c.yaml", []byte("http:\n  tls: {cert_file: c.pem, key_file: k.pem}\n"+job0))
	if err == nil || !strings.Contains(err.Error(), "c.yaml:2: http.tls: has no effect") {
		t.Errorf("tls without a listener: error %v", err)
	}
}
