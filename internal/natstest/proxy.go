package natstest

import (
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// Proxy forwards TCP connections to a target address and can silence them:
// Freeze stops forwarding in both directions without closing anything (a
// black hole, as in a network partition), FreezeReplies only from the
// server to its clients (requests arrive, their replies are lost), Thaw
// resumes, Cut closes every connection. Clients connect to Proxy.URL().
type Proxy struct {
	target string
	ln     net.Listener

	mu     sync.Mutex
	delay  time.Duration
	frozen bool
	// replies: only what the server sends is held (FreezeReplies).
	replies bool
	thaw    chan struct{} // closed on Thaw; replaced on Freeze
	conns   map[net.Conn]struct{}
	held    map[*byte][]byte // data held by Freeze, by buffer
	wg      sync.WaitGroup
}

// NewProxy starts a proxy to target (host:port), closed by t.Cleanup.
func NewProxy(tb testing.TB, target string) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("natstest: proxy listen: %v", err)
	}
	p := &Proxy{target: target, ln: ln, thaw: make(chan struct{}), conns: map[net.Conn]struct{}{}, held: map[*byte][]byte{}}
	close(p.thaw)
	p.wg.Add(1)
	go p.accept()
	tb.Cleanup(p.Close)
	return p
}

// URL is the nats:// URL clients use to go through the proxy.
func (p *Proxy) URL() string { return "nats://" + p.ln.Addr().String() }

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[u] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(u, c, false)
		go p.pipe(c, u, true)
	}
}

func (p *Proxy) pipe(dst, src net.Conn, fromServer bool) {
	defer p.wg.Done()
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			delay := p.hold(buf[:n], fromServer) // frozen: hold the bytes, as a silent network would
			if delay > 0 {
				time.Sleep(delay) // a slow link, in both directions
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// hold waits while data in this direction is frozen, and returns the
// delay to apply.
func (p *Proxy) hold(data []byte, fromServer bool) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	defer delete(p.held, &data[0])
	for p.frozen || (fromServer && p.replies) {
		p.held[&data[0]] = data
		gate := p.thaw
		p.mu.Unlock()
		<-gate
		p.mu.Lock()
	}
	return p.delay
}

// SetDelay makes every chunk of data wait d before it is forwarded (0: no
// delay).
func (p *Proxy) SetDelay(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay = d
}

// Freeze silences every connection, present and future, until Thaw.
func (p *Proxy) Freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.block()
	p.frozen = true
}

// FreezeReplies silences what the server sends on every connection,
// present and future, until Thaw: the requests clients send arrive and are
// applied, their replies are held.
func (p *Proxy) FreezeReplies() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.block()
	p.replies = true
}

// block makes a new gate for Thaw to open, unless one is shut already.
func (p *Proxy) block() {
	if !p.frozen && !p.replies {
		p.thaw = make(chan struct{})
	}
}

// Holding reports whether data containing s is held by Freeze (a request
// the frozen link swallowed, say).
func (p *Proxy) Holding(s string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range p.held {
		if strings.Contains(string(b), s) {
			return true
		}
	}
	return false
}

// Thaw resumes forwarding in both directions.
func (p *Proxy) Thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.frozen || p.replies {
		p.frozen, p.replies = false, false
		close(p.thaw)
	}
}

// Cut closes every current connection (clients see a disconnect).
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

// Drop closes every current connection and resumes forwarding: what
// Freeze or FreezeReplies held is lost with its connection, as with a
// server that died holding it, and clients reconnect through the proxy.
func (p *Proxy) Drop() {
	p.Cut()
	p.Thaw()
}

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() {
	p.ln.Close()
	p.Thaw()
	p.Cut()
	p.wg.Wait()
}
