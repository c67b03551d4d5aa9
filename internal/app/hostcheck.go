package app

import (
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// refusalLogInterval bounds the lines logged about one client's refused
// requests to one per interval.
const refusalLogInterval = time.Minute

// allowedHosts serves next only the requests whose Host header names one
// of hosts (http.allowed_hosts: without port, any case) or the address the
// request came in on: an IP literal equal to the connection's local IP, or
// "localhost" on a loopback connection. Others get 421 Misdirected Request:
// a page of another site whose name was rebound to this address (DNS
// rebinding) cannot read the status page or the API; refusals are logged
// to refusals. hosts nil: every request is served.
func allowedHosts(next http.Handler, hosts []string, refusals *rateLimitedLog) http.Handler {
	if hosts == nil {
		return next
	}
	allowed := make(map[string]bool, len(hosts))
	for _, h := range hosts {
		allowed[normalHost(h)] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := normalHost(r.Host)
		if allowed[host] || ownAddress(r, host) {
			next.ServeHTTP(w, r)
			return
		}
		refusals.warn(clientIP(r), func(e *zerolog.Event) *zerolog.Event {
			return e.Str("client", r.RemoteAddr).Str("host", r.Host).Str("path", r.URL.Path)
		}, "HTTP request refused: its Host is not in http.allowed_hosts (logged at most once a minute per client)")
		http.Error(w, "421 misdirected request: this host name is not served here (http.allowed_hosts)",
			http.StatusMisdirectedRequest)
	})
}

// ownAddress reports whether host is the address r came in on.
func ownAddress(r *http.Request, host string) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return false
	}
	ip := addrIP(local)
	if ip == nil {
		return false
	}
	if h := net.ParseIP(host); h != nil {
		return h.Equal(ip)
	}
	return host == "localhost" && ip.IsLoopback()
}

// addrIP is the IP of a TCP address, or nil.
func addrIP(a net.Addr) net.IP {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.IP
	}
	return nil
}

// normalHost is host without its port, IPv6 brackets and trailing dot, in
// lower case.
func normalHost(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return strings.ToLower(strings.TrimSuffix(host, "."))
}

// clientIP is the IP of r's client, without the port.
func clientIP(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return h
	}
	return r.RemoteAddr
}

// rateLimitedLog logs at most one line per key per interval.
type rateLimitedLog struct {
	log      zerolog.Logger
	interval time.Duration
	mu       sync.Mutex
	last     map[string]time.Time
}

func newRateLimitedLog(log zerolog.Logger, interval time.Duration) *rateLimitedLog {
	return &rateLimitedLog{log: log, interval: interval, last: map[string]time.Time{}}
}

// warn logs msg at warn with the fields fields adds, unless a line for key
// was logged less than the interval ago.
func (l *rateLimitedLog) warn(key string, fields func(*zerolog.Event) *zerolog.Event, msg string) {
	now := time.Now()
	l.mu.Lock()
	if now.Sub(l.last[key]) < l.interval {
		l.mu.Unlock()
		return
	}
	for k, t := range l.last { // forget clients not seen for an interval
		if now.Sub(t) >= l.interval {
			delete(l.last, k)
		}
	}
	l.last[key] = now
	l.mu.Unlock()
	fields(l.log.Warn()).Msg(msg)
}
