package app

import (
	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/config"
	"github.com/cronlock/cronlock/internal/web"
)

// The HTTP tokens (http.admin_token, http.read_token, or their files) are
// the one part of the http section a reload applies: the web handler asks
// for them at every request, so a token changed or removed by a reload
// stops working at once. Keeping a revoked token valid until a restart is
// what an operator rotating a leaked token must never get.

// httpTokens are the tokens of cfg's http section.
func httpTokens(h config.HTTP) web.Tokens {
	return web.Tokens{Admin: h.AdminToken.Value(), Read: h.ReadToken.Value()}
}

// webTokens returns the tokens in effect; the web handler's Options.Tokens.
func (d *Daemon) webTokens() web.Tokens {
	if t := d.tokens.Load(); t != nil {
		return *t
	}
	return web.Tokens{}
}

// applyTokens puts next's HTTP tokens in effect and logs which changed,
// never their values.
func (d *Daemon) applyTokens(next *config.Config, log zerolog.Logger) {
	old, now := d.webTokens(), httpTokens(next.HTTP)
	d.tokens.Store(&now)
	for _, t := range []struct {
		key       string
		was, is   string
		whatTaken string
	}{
		{"http.admin_token", old.Admin, now.Admin, "the actions"},
		{"http.read_token", old.Read, now.Read, "reading the page, /api/ and /metrics"},
	} {
		switch {
		case t.was == t.is:
		case t.is == "":
			log.Warn().Str("key", t.key).Msgf("reload: %s removed; %s no longer need a token", t.key, t.whatTaken)
		default:
			log.Info().Str("key", t.key).Msgf("reload: %s changed; the old token no longer works", t.key)
		}
	}
}

// restartHTTP is the part of h that takes effect only after a restart:
// all of it but the tokens.
func restartHTTP(h config.HTTP) config.HTTP {
	h.AdminToken, h.AdminTokenFile, h.ReadToken, h.ReadTokenFile = "", "", "", ""
	return h
}
