package chaos

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// echoServer echoes every connection until closed.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(t *testing.T, c net.Conn, msg string, timeout time.Duration) (time.Duration, error) {
	t.Helper()
	start := time.Now()
	c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte(msg)); err != nil {
		return 0, err
	}
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(c, buf); err != nil {
		return 0, err
	}
	if string(buf) != msg {
		t.Fatalf("echo: got %q, want %q", buf, msg)
	}
	return time.Since(start), nil
}

func newTestProxy(t *testing.T) (*Proxy, net.Conn) {
	t.Helper()
	p, err := NewProxy(echoServer(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return p, c
}

func TestProxyPassAndDelay(t *testing.T) {
	p, c := newTestProxy(t)
	if d, err := roundTrip(t, c, "hello", time.Second); err != nil || d > 100*time.Millisecond {
		t.Fatalf("pass: round trip %v, %v", d, err)
	}
	p.SetMode(Delay, 150*time.Millisecond)
	// Both directions are delayed: at least 300 ms.
	if d, err := roundTrip(t, c, "slow", 2*time.Second); err != nil || d < 300*time.Millisecond || d > 900*time.Millisecond {
		t.Fatalf("delay: round trip %v, %v; want ≈300ms", d, err)
	}
	// Order is kept across many chunks.
	for i := range 20 {
		if _, err := c.Write([]byte{byte('a' + i)}); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, 20)
	c.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatal(err)
	}
	for i, b := range buf {
		if b != byte('a'+i) {
			t.Fatalf("delay reordered bytes: %q", buf)
		}
	}
	p.SetMode(Pass, 0)
	if d, err := roundTrip(t, c, "fast", time.Second); err != nil || d > 100*time.Millisecond {
		t.Fatalf("pass again: round trip %v, %v", d, err)
	}
}

func TestProxyBlackhole(t *testing.T) {
	p, c := newTestProxy(t)
	p.SetMode(Blackhole, 0)
	if _, err := roundTrip(t, c, "lost?", 300*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("blackhole: got %v, want a timeout", err)
	}
	// A new connection is accepted but silent too.
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := roundTrip(t, c2, "x", 300*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("blackhole, new conn: got %v, want a timeout", err)
	}
	// Healing delivers the held bytes, in order, on the same connection.
	p.SetMode(Pass, 0)
	buf := make([]byte, 5)
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "lost?" {
		t.Fatalf("after heal: %q, %v", buf, err)
	}
}

func TestProxyCut(t *testing.T) {
	p, c := newTestProxy(t)
	if _, err := roundTrip(t, c, "hi", time.Second); err != nil {
		t.Fatal(err)
	}
	p.SetMode(Cut, 0)
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("cut: read got %v, want the connection closed", err)
	}
	// New connections are closed at once.
	c2, err := net.Dial("tcp", p.Addr())
	if err == nil {
		c2.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := c2.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("cut: new connection read got %v, want closed", err)
		}
		c2.Close()
	}
	p.SetMode(Pass, 0)
	c3, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	if _, err := roundTrip(t, c3, "back", time.Second); err != nil {
		t.Fatalf("after cut: %v", err)
	}
}

func TestProxyGroup(t *testing.T) {
	addr := echoServer(t)
	g, err := NewProxyGroup([]string{addr, addr, addr})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if len(g.Proxies) != 3 || len(g.URL()) == 0 {
		t.Fatalf("group: %d proxies, URL %q", len(g.Proxies), g.URL())
	}
	g.SetMode(Blackhole, 0)
	for _, p := range g.Proxies {
		if m, _ := p.Mode(); m != Blackhole {
			t.Fatalf("proxy %s mode %v", p.Addr(), m)
		}
	}
}
