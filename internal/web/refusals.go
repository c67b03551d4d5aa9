package web

import (
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// Refused requests (a missing or wrong token, a cross-site login) are
// logged at warn with the client's address, at most one line per address
// per refusalLogEvery: a client retrying in a loop, or a scanner, costs one
// line a minute, which says how many refusals it stands for.

// refusalLogEvery is the least time between two lines for one address.
const refusalLogEvery = time.Minute

// maxRefusalClients bounds the addresses remembered. When that many were
// refused within the last minute (many addresses, such as an IPv6 range),
// the others share one line a minute under the address "others".
const maxRefusalClients = 1024

// othersClient is the address of the shared line past maxRefusalClients.
const othersClient = "others"

// RefusalLog rate-limits the refusal lines per client address. One is
// shared by every check that refuses requests (tokens here, the Host check
// of the listener), so that a client gets one line a minute in all.
type RefusalLog struct {
	log zerolog.Logger
	now func() time.Time

	mu      sync.Mutex
	clients map[string]*refusals
}

// refusals is one address's state: when its last line was written, and
// how many refusals came since.
type refusals struct {
	logged     time.Time
	suppressed int
}

// NewRefusalLog returns a RefusalLog writing to log.
func NewRefusalLog(log zerolog.Logger) *RefusalLog { return newRefusalLog(log, time.Now) }

func newRefusalLog(log zerolog.Logger, now func() time.Time) *RefusalLog {
	return &RefusalLog{log: log, now: now, clients: map[string]*refusals{}}
}

// Refused logs that r was refused for reason, unless its address had a
// line within refusalLogEvery, in which case it is counted for the next.
func (l *RefusalLog) Refused(r *http.Request, reason string) {
	client := clientAddr(r)
	now := l.now()
	l.mu.Lock()
	c, ok := l.clients[client]
	if !ok { // the last slot is kept for othersClient
		if len(l.clients) >= maxRefusalClients-1 {
			l.prune(now)
		}
		if len(l.clients) >= maxRefusalClients-1 {
			client = othersClient
			c = l.clients[client]
		}
	}
	if c != nil && now.Sub(c.logged) < refusalLogEvery {
		c.suppressed++
		l.mu.Unlock()
		return
	}
	suppressed := 0
	if c != nil {
		suppressed = c.suppressed
	}
	l.clients[client] = &refusals{logged: now}
	l.mu.Unlock()
	l.log.Warn().Str("client", client).Str("method", r.Method).Str("path", r.URL.Path).Str("reason", reason).
		Int("refused_since_last_line", suppressed).
		Msgf("refused a request (at most one line per client address per %v)", refusalLogEvery)
}

// prune forgets the addresses whose last line is older than
// refusalLogEvery: their next refusal is logged anyway. Call with l.mu held.
func (l *RefusalLog) prune(now time.Time) {
	for k, c := range l.clients {
		if now.Sub(c.logged) >= refusalLogEvery {
			delete(l.clients, k)
		}
	}
}

// clientAddr is the IP address of r's client, without the port (a client
// opens connections from many ports). Forwarding headers are not trusted:
// any client can write them.
func clientAddr(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}
