package app

import (
	"fmt"
	"github.com/cronlock/cronlock/internal/web"
	"net"
	"net/http"
	"strings"
)

// allowedHosts serves next only the requests whose Host header names one
// of hosts (http.allowed_hosts: without port, any case) or the address the
// request came in on: an IP literal equal to the connection's local IP, or
// "localhost" on a loopback connection. Others get 421 Misdirected Request:
// a page of another site whose name was rebound to this address (DNS
// rebinding) cannot read the status page or the API; refusals are logged
// to refusals. hosts nil: every request is served.
func allowedHosts(next http.Handler, hosts []string, refusals *web.RefusalLog) http.Handler {
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
		refusals.Refused(r, fmt.Sprintf("Host %q not in http.allowed_hosts", r.Host))
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
