package app

import (
	"strings"
	"testing"
	"time"
)

func TestRedactURLs(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"nats://127.0.0.1:4222":                         "nats://127.0.0.1:4222",
		"nats://user:s3cret@a:4222,nats://tok3n@b:4222": "nats://[redacted]@a:4222,nats://[redacted]@b:4222",
		"tls://u:p@host:4222":                           "tls://[redacted]@host:4222",
		"nats://a:4222, nats://b:4222":                  "nats://a:4222,nats://b:4222",
		"nats://u:%zz@host":                             "[unparsable URL]",
	} {
		got := redactURLs(in)
		if got != want {
			t.Errorf("redactURLs(%q) = %q, want %q", in, got, want)
		}
		for _, secret := range []string{"s3cret", "tok3n", "%zz"} {
			if strings.Contains(got, secret) {
				t.Errorf("redactURLs(%q) = %q shows a secret", in, got)
			}
		}
	}
}

// TestReconnectDelay: the pauses double up to reconnectMax, jittered; the
// cap and the dial timeout keep a reconnect within 2 s of NATS being back.
func TestReconnectDelay(t *testing.T) {
	t.Parallel()
	if worst := reconnectMax + reconnectDialTimeout; worst >= 2*time.Second {
		t.Errorf("worst-case reconnect %v (reconnectMax + reconnectDialTimeout), want under 2s", worst)
	}
	for attempts, want := range map[int]time.Duration{0: reconnectBase, 1: 2 * reconnectBase, 2: reconnectMax, 10: reconnectMax, 1000: reconnectMax} {
		for range 20 {
			d := reconnectDelay(attempts)
			if d < want/2 || d >= want {
				t.Fatalf("reconnectDelay(%d) = %v, want in [%v, %v)", attempts, d, want/2, want)
			}
		}
	}
}

func TestConnectAddr(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		":4222":          "127.0.0.1:4222",
		"0.0.0.0:4222":   "127.0.0.1:4222",
		"[::]:4222":      "127.0.0.1:4222",
		"10.1.2.3:4222":  "10.1.2.3:4222",
		"localhost:4222": "localhost:4222",
	} {
		if got := connectAddr(in); got != want {
			t.Errorf("connectAddr(%q) = %q, want %q", in, got, want)
		}
	}
}
