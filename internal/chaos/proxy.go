package chaos

import (
	"fmt"
	"net"
	"sync"
	"time"
)

// NetMode is what a Proxy does with the traffic of its connections.
type NetMode int

const (
	// Pass forwards bytes as they come.
	Pass NetMode = iota
	// Delay forwards every chunk of bytes after the proxy's delay, keeping
	// their order (a slow or congested link).
	Delay
	// Blackhole holds every byte, in both directions, of present and new
	// connections without closing anything: a silent partition. Held bytes
	// are delivered, in order, when the mode changes back (as TCP would
	// retransmit them after the partition heals).
	Blackhole
	// Cut closes every connection and every new one at once (the peer is
	// unreachable and says so).
	Cut
)

func (m NetMode) String() string {
	switch m {
	case Pass:
		return "pass"
	case Delay:
		return "delay"
	case Blackhole:
		return "blackhole"
	case Cut:
		return "cut"
	}
	return fmt.Sprintf("NetMode(%d)", int(m))
}

// Proxy forwards TCP connections accepted on a loopback port to a target
// address. Its mode (Pass, Delay, Blackhole, Cut) applies to every
// connection at once, present and future.
type Proxy struct {
	target string
	ln     net.Listener

	mu     sync.Mutex
	mode   NetMode
	delay  time.Duration
	change chan struct{} // closed and replaced on every mode change
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// NewProxy listens on 127.0.0.1 (port 0: any free port) and forwards to target.
func NewProxy(target string, port int) (*Proxy, error) {
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return nil, fmt.Errorf("chaos: proxy listen: %w", err)
	}
	p := &Proxy{target: target, ln: ln, change: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// URL is the nats:// URL of the proxy.
func (p *Proxy) URL() string { return "nats://" + p.Addr() }

// Mode returns the current mode and delay.
func (p *Proxy) Mode() (NetMode, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode, p.delay
}

// SetMode switches every connection to mode; d is the delay for Delay.
func (p *Proxy) SetMode(mode NetMode, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode, p.delay = mode, d
	close(p.change)
	p.change = make(chan struct{})
	if mode == Cut {
		for c := range p.conns {
			c.Close()
			delete(p.conns, c)
		}
	}
}

func (p *Proxy) state() (NetMode, time.Duration, chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode, p.delay, p.change
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.closed || p.mode == Cut {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns[c] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.mode == Cut {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
		c.Close()
	}
}

func (p *Proxy) serve(c net.Conn) {
	defer p.wg.Done()
	// Dialing the target goes through the mode too: a black hole holds
	// the client's bytes whether or not the upstream connection exists.
	u, err := net.DialTimeout("tcp", p.target, 2*time.Second)
	if err != nil {
		p.untrack(c)
		return
	}
	if !p.track(u) {
		p.untrack(c, u)
		return
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.pipe(u, c) }()
	go func() { defer wg.Done(); p.pipe(c, u) }()
	wg.Wait()
	p.untrack(c, u)
}

type chunk struct {
	b  []byte
	at time.Time // when it was read
}

// pipe copies src to dst. A reader goroutine stamps each chunk with the
// time it was read; the writer holds it while the mode is Blackhole and
// until at+delay in Delay mode, so order is kept and a delay applies to
// bytes from when they were sent, not from when the mode changed.
func (p *Proxy) pipe(dst, src net.Conn) {
	q := make(chan chunk, 1024)
	done := make(chan struct{})
	go func() {
		defer close(q)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				select {
				case q <- chunk{buf[:n], time.Now()}:
				case <-done:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	defer close(done)
	defer dst.Close()
	defer src.Close()
	for ch := range q {
		for {
			mode, d, change := p.state()
			if mode == Cut {
				return
			}
			if mode == Blackhole {
				<-change
				continue
			}
			if mode == Delay {
				if wait := time.Until(ch.at.Add(d)); wait > 0 {
					t := time.NewTimer(wait)
					select {
					case <-t.C:
					case <-change:
						t.Stop()
						continue
					}
				}
			}
			break
		}
		if _, err := dst.Write(ch.b); err != nil {
			return
		}
	}
}

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.ln.Close()
	p.SetMode(Cut, 0)
	p.wg.Wait()
}

// ProxyGroup is the set of proxies through which one replica reaches every
// NATS node: its traffic is controlled as one.
type ProxyGroup struct {
	Proxies []*Proxy
}

// NewProxyGroup starts one proxy per target.
func NewProxyGroup(targets []string) (*ProxyGroup, error) {
	g := &ProxyGroup{}
	for _, t := range targets {
		p, err := NewProxy(t, 0)
		if err != nil {
			g.Close()
			return nil, err
		}
		g.Proxies = append(g.Proxies, p)
	}
	return g, nil
}

// URL is the comma-separated list of the group's proxy URLs.
func (g *ProxyGroup) URL() string {
	s := ""
	for i, p := range g.Proxies {
		if i > 0 {
			s += ","
		}
		s += p.URL()
	}
	return s
}

// SetMode sets the mode of every proxy of the group.
func (g *ProxyGroup) SetMode(mode NetMode, d time.Duration) {
	for _, p := range g.Proxies {
		p.SetMode(mode, d)
	}
}

// Close closes every proxy.
func (g *ProxyGroup) Close() {
	for _, p := range g.Proxies {
		p.Close()
	}
}
