package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
)

// Read access. With a read token configured, every route but the static
// assets and the login form's POST needs one of:
//
//   - "Authorization: Bearer <token>" with the read token or the admin
//     token (the admin token grants reading too);
//   - the session cookie ReadCookie, which POST /login sets when the token
//     entered on the page is one of them.
//
// The cookie holds an HMAC of the token, not the token: it is HttpOnly
// (scripts cannot read it), SameSite=Strict (no other site's page or link
// sends it, so it cannot carry a cross-site request), Secure over TLS, and
// it stops working when the token changes. It grants reading only: the
// actions still need the admin token in the Authorization header, which no
// cross-site request can set. A refused API request is answered 401 with
// JSON; a refused page is answered 401 with the login form.

// Tokens are the HTTP tokens in effect; "" is not set.
type Tokens struct {
	Admin, Read string
}

// ReadCookie is the name of the read session cookie.
const ReadCookie = "cronlock_read"

// cookieLabel separates the cookie's HMAC from any other use of the token.
const cookieLabel = "cronlock read session v1"

// tokens returns the tokens in effect.
func (s *server) tokens() Tokens {
	if s.opts.Tokens != nil {
		return s.opts.Tokens()
	}
	return Tokens{Admin: s.opts.AdminToken, Read: s.opts.ReadToken}
}

// cookieValue is the cookie that a login with tok sets.
func cookieValue(tok string) string {
	m := hmac.New(sha256.New, []byte(tok))
	m.Write([]byte(cookieLabel))
	return hex.EncodeToString(m.Sum(nil))
}

// mayRead reports whether r may read: no read token is set, or r carries
// the read or admin token, as a bearer token or as the session cookie.
func (s *server) mayRead(r *http.Request) bool {
	t := s.tokens()
	if t.Read == "" {
		return true
	}
	if b := bearer(r); b != "" && (tokenIs(b, t.Read) || tokenIs(b, t.Admin)) {
		return true
	}
	c, err := r.Cookie(ReadCookie)
	if err != nil {
		return false
	}
	return tokenIs(c.Value, cookieValue(t.Read)) || (t.Admin != "" && tokenIs(c.Value, cookieValue(t.Admin)))
}

// readGuard lets through the requests that may read, and the ones that need
// no token: the static assets and the login form's POST.
func (s *server) readGuard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.mayRead(r) || strings.HasPrefix(r.URL.Path, "/static/") || r.URL.Path == "/login" {
			next.ServeHTTP(w, r)
			return
		}
		s.refusals.Refused(r, "read without the read token")
		s.unauthorized(w, r, "")
	})
}

// unauthorized answers 401: JSON for the API and /metrics, the login form
// (with problem, if any) for pages.
func (s *server) unauthorized(w http.ResponseWriter, r *http.Request, problem string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="cronlock"`)
	if r.Method != http.MethodGet || strings.HasPrefix(r.URL.Path, "/api/") || r.URL.Path == "/metrics" {
		writeJSON(w, http.StatusUnauthorized, errorResponse{
			Error: "unauthorized: send the read token as Authorization: Bearer <token>"})
		return
	}
	s.render(w, http.StatusUnauthorized, "login.html", loginData{Next: r.URL.RequestURI(), Problem: problem})
}

// loginData is what assets/templates/login.html renders.
type loginData struct {
	Next    string // where to go after the login
	Problem string
}

// login serves POST /login: the form's token, if it is the read or admin
// token, becomes the session cookie and the browser goes on to the page it
// asked for. A cross-site POST is refused (403) before the token is looked at.
func (s *server) login(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		s.refusals.Refused(r, "cross-site login")
		writeJSON(w, http.StatusForbidden, errorResponse{Error: "forbidden: cross-site request"})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxLoginForm)
	tok := strings.TrimSpace(r.PostFormValue("token"))
	next := localPath(r.PostFormValue("next"))
	t := s.tokens()
	switch {
	case t.Read == "":
		http.Redirect(w, r, next, http.StatusSeeOther) // nothing to log in to
		return
	case !tokenIs(tok, t.Read) && !tokenIs(tok, t.Admin):
		s.refusals.Refused(r, "login with a wrong token")
		w.Header().Set("WWW-Authenticate", `Bearer realm="cronlock"`)
		s.render(w, http.StatusUnauthorized, "login.html", loginData{Next: next, Problem: wrongToken})
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: ReadCookie, Value: cookieValue(tok), Path: "/",
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// wrongToken is what the login form says after a wrong token.
const wrongToken = "That is not the read token (or the admin token)."

// maxLoginForm bounds the login form's body: a token and a path.
const maxLoginForm = 8 << 10

// sameOrigin reports whether r comes from this site's own page. Browsers
// say so in Sec-Fetch-Site (same-origin, or none: typed by the user);
// those too old to send it are judged by Origin, when it names a host. The
// page's Referrer-Policy (no-referrer) makes a form's Origin "null", so
// that says nothing. Clients that send neither (curl) are not browsers and
// cannot be made to send a request by another site.
func sameOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "same-origin", "none":
		return true
	case "":
	default:
		return false
	}
	o := r.Header.Get("Origin")
	if o == "" || o == "null" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

// localPath is p if it is a path on this server, else "/": the login must
// not redirect elsewhere.
func localPath(p string) string {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.HasPrefix(p, `/\`) {
		return "/"
	}
	return p
}
