package app

import (
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// jobFDReserve is how many file descriptors the HTTP listeners leave to
// everything else when the connection limit is derived from the open-file
// limit: each running job's pipes and shim, the NATS connection, the
// embedded server's store files and clients, the config watcher, the
// notification targets.
const jobFDReserve = 128

// minHTTPConnections keeps /healthz and a scraper reachable however low the
// open-file limit is.
const minHTTPConnections = 8

// newConnGrace is how long an accepted connection may stay without a
// request before a new connection may take its place at the limit: a
// client sends its request (or TLS hello) at once; one that does not is a
// slow or idle client.
const newConnGrace = time.Second

// limitLogInterval bounds the "connection limit reached" warnings to one
// per interval.
const limitLogInterval = time.Minute

// httpConnectionLimit is the number of HTTP connections the daemon allows
// open at once: configured (0: the default), lowered to half the open-file
// limit and to that limit less jobFDReserve, but not below
// minHTTPConnections. Go raises the process's soft limit to its hard limit
// at start (and gives child processes the original soft limit back), so the
// hard limit is what counts; a limit that cannot be read leaves configured.
func httpConnectionLimit(configured, dflt int, log zerolog.Logger) int {
	want := configured
	if want == 0 {
		want = dflt
	}
	nofile, ok := openFileLimit()
	if !ok {
		return want
	}
	budget := min(nofile/2, max(nofile, jobFDReserve)-jobFDReserve)
	budget = max(budget, minHTTPConnections)
	if uint64(want) <= budget {
		return want
	}
	if configured != 0 {
		log.Warn().Int("max_connections", configured).Uint64("open_file_limit", nofile).Uint64("using", budget).
			Msg("http.max_connections lowered: the open-file limit leaves no more beside what jobs and NATS need")
	}
	return int(budget)
}

// connLimiter bounds the connections open on the listeners it wraps,
// together. At the limit a new connection takes the place of the oldest
// idle keep-alive connection (its client reconnects when it needs to) or,
// if none is idle, of the oldest one that has sent no request for
// newConnGrace; if every connection is busy with a request (each bounded
// by the read and write timeouts), the new one is closed at once. So idle
// and slow clients cannot keep /healthz or a scraper out, and the
// descriptors beyond the limit stay for jobs.
type connLimiter struct {
	max int
	log zerolog.Logger

	mu      sync.Mutex
	conns   map[*limitedConn]connState // open and counted
	lastLog time.Time

	open  prometheus.GaugeFunc
	limit prometheus.Gauge
	shed  *prometheus.CounterVec // by reason: evicted, refused
}

// connState is what the limiter knows of one connection.
type connState struct {
	state http.ConnState
	since time.Time
}

func newConnLimiter(max int, log zerolog.Logger) *connLimiter {
	l := &connLimiter{max: max, log: log, conns: map[*limitedConn]connState{}}
	l.open = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "cronlock_http_connections",
		Help: "HTTP connections open now, all listeners together.",
	}, func() float64 {
		l.mu.Lock()
		defer l.mu.Unlock()
		return float64(len(l.conns))
	})
	l.limit = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "cronlock_http_connections_max",
		Help: "The HTTP connection limit in effect (http.max_connections, lowered to what the open-file limit allows).",
	})
	l.limit.Set(float64(max))
	l.shed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "cronlock_http_connections_shed_total",
		Help: "HTTP connections closed at the connection limit: evicted (an idle one, for a new one) or refused (every one busy).",
	}, []string{"reason"})
	l.shed.WithLabelValues("evicted")
	l.shed.WithLabelValues("refused")
	return l
}

func (l *connLimiter) collectors() []prometheus.Collector {
	return []prometheus.Collector{l.open, l.limit, l.shed}
}

// listener wraps ln so that its connections count against l.
func (l *connLimiter) listener(ln net.Listener) net.Listener {
	return &limitedListener{Listener: ln, lim: l}
}

// admit counts c in, making room by evicting a connection when at the
// limit. It returns nil when c must be refused.
func (l *connLimiter) admit(c net.Conn) *limitedConn {
	now := time.Now()
	l.mu.Lock()
	var victim *limitedConn
	if len(l.conns) >= l.max {
		victim = l.victim(now)
		if victim != nil {
			delete(l.conns, victim)
		}
		l.warn(now, victim != nil)
	}
	var lc *limitedConn
	if victim != nil || len(l.conns) < l.max {
		lc = &limitedConn{Conn: c, lim: l}
		l.conns[lc] = connState{state: http.StateNew, since: now}
	}
	l.mu.Unlock()
	switch {
	case victim != nil:
		l.shed.WithLabelValues("evicted").Inc()
		victim.Conn.Close()
	case lc == nil:
		l.shed.WithLabelValues("refused").Inc()
	}
	return lc
}

// victim is the connection to close for a new one: the oldest idle, else
// the oldest that has sent nothing for newConnGrace; nil if none. Call with
// l.mu held.
func (l *connLimiter) victim(now time.Time) *limitedConn {
	var idle, fresh *limitedConn
	var idleSince, freshSince time.Time
	for c, s := range l.conns {
		switch {
		case s.state == http.StateIdle && (idle == nil || s.since.Before(idleSince)):
			idle, idleSince = c, s.since
		case s.state == http.StateNew && now.Sub(s.since) >= newConnGrace && (fresh == nil || s.since.Before(freshSince)):
			fresh, freshSince = c, s.since
		}
	}
	if idle != nil {
		return idle
	}
	return fresh
}

// warn logs that the limit was reached, at most once per limitLogInterval.
// Call with l.mu held.
func (l *connLimiter) warn(now time.Time, evicted bool) {
	if now.Sub(l.lastLog) < limitLogInterval {
		return
	}
	l.lastLog = now
	what := "refusing new connections while every one is busy"
	if evicted {
		what = "closing the oldest idle connections for new ones"
	}
	l.log.Warn().Int("max_connections", l.max).Msg("HTTP connection limit reached: " + what +
		" (cronlock_http_connections_shed_total counts them; logged at most once a minute)")
}

// track is the http.Server's ConnState hook: it records the state the
// victims are chosen by.
func (l *connLimiter) track(c net.Conn, state http.ConnState) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, counted := l.conns[lc]; counted {
		l.conns[lc] = connState{state: state, since: time.Now()}
	}
}

// release stops counting c.
func (l *connLimiter) release(c *limitedConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.conns, c)
}

// limitedListener admits each accepted connection through its limiter;
// refused ones are closed without being returned.
type limitedListener struct {
	net.Listener
	lim *connLimiter
}

func (ln *limitedListener) Accept() (net.Conn, error) {
	for {
		c, err := ln.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if lc := ln.lim.admit(c); lc != nil {
			return lc, nil
		}
		c.Close()
	}
}

// limitedConn is a connection counted by its limiter until closed.
type limitedConn struct {
	net.Conn
	lim  *connLimiter
	once sync.Once
}

func (c *limitedConn) Close() error {
	c.once.Do(func() { c.lim.release(c) })
	return c.Conn.Close()
}
