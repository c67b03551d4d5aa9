package config

import (
	"net"
	"strings"
)

// EmbeddedAuth is what clients of the embedded NATS server must present.
// The zero value (the default) asks for nothing, which is allowed only
// while nats.embedded.listen is empty or on a loopback address: any other
// address would let everyone who reaches it read and write the locks and
// the history. The daemon's own connection, and operator commands run with
// the same file, present it themselves; replicas on other hosts set
// nats.url to this server and nats.token (or nats.token_file) to the same
// token. Routes between cluster nodes (nats.embedded.cluster) are not
// affected.
type EmbeddedAuth struct {
	// Token is the token clients must send; the rules of http.admin_token
	// (at least MinAdminTokenLength visible ASCII characters, not a
	// placeholder). Default "".
	Token Secret `yaml:"token"`
	// TokenFile names a file holding Token (the *_file convention).
	TokenFile string `yaml:"token_file"`
}

// InUse reports whether the embedded server requires a token.
func (a EmbeddedAuth) InUse() bool { return a.Token != "" }

// LoopbackListen reports whether the listen address addr (host:port) only
// accepts connections from this host: its host is "localhost" or a
// loopback IP. An empty or unspecified host ("":4222, "0.0.0.0:4222")
// listens on every interface and is not loopback; so is a host name,
// which may resolve to anything.
func LoopbackListen(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// validateEmbeddedAuth checks nats.embedded.auth: required for a listen
// address that is not loopback, a strong token, and no client credentials
// of another method beside it (the embedded server's clients use its token).
func (d *decoder) validateEmbeddedAuth(n *NATS) {
	const listen = "nats.embedded.listen"
	a := n.Embedded.Auth
	path := d.fileKey("nats.embedded.auth.token")
	written := d.set[path] && a.Token != "" // "" is no token, as for nats.token
	switch {
	case written && d.isFailed(path):
		return
	case written && n.URL != "":
		d.check(true, path, []string{"nats.url"}, "applies only to the embedded server, which is not used when nats.url is set")
		return
	case written:
		if msg := tokenProblem(a.Token.Value(), "to accept clients without a token (on a loopback listen address only)"); msg != "" {
			d.check(true, path, nil, "%s", msg)
			return
		}
	}
	if n.URL == "" && n.Embedded.Listen != "" && !a.InUse() && !LoopbackListen(n.Embedded.Listen) {
		d.check(true, listen, nil, "listens on %s, which is not a loopback address, without credentials: anyone who "+
			"reaches it could take, release and forge every lock; set nats.embedded.auth.token_file (or token), "+
			"or listen on 127.0.0.1", quote(n.Embedded.Listen))
	}
	if !a.InUse() || n.URL != "" {
		return
	}
	for _, k := range []struct {
		key string
		set bool
	}{
		{"nats.creds_file", n.CredsFile != ""}, {"nats.nkey_file", n.NKeyFile != ""},
		{d.fileKey("nats.token"), n.Token != ""}, {"nats.user", n.User != ""},
	} {
		d.check(k.set, k.key, []string{path}, "conflicts with %s: clients of the embedded server use its token", path)
	}
}
