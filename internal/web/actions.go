package web

import (
	"context"
	"crypto/subtle"
	"net/http"
	"strings"
)

// actionResponse is the body of a successful action.
type actionResponse struct {
	Job    string `json:"job"`
	Action string `json:"action"`
	OK     bool   `json:"ok"`
}

// action returns the Source method for an action name, or nil.
func (s *server) action(name string) func(context.Context, string) error {
	switch name {
	case "trigger":
		return s.src.Trigger
	case "suspend":
		return s.src.Suspend
	case "resume":
		return s.src.Resume
	case "cancel":
		return s.src.Cancel
	}
	return nil
}

// apiAction serves POST /api/jobs/{name}/{trigger|suspend|resume|cancel}: 404 when
// no admin token is configured (the actions do not exist) or the action or
// job is unknown, 403 without the right bearer token.
func (s *server) apiAction(w http.ResponseWriter, r *http.Request) {
	act := s.action(r.PathValue("action"))
	if act == nil {
		writeJSON(w, http.StatusNotFound, errorResponse{Error: "no such action"})
		return
	}
	if !s.admitAction(w, r) {
		return
	}
	name := r.PathValue("name")
	if err := act(r.Context(), name); err != nil {
		s.apiError(w, r, err)
		return
	}
	s.opts.Logger.Info().Str("job", name).Str("action", r.PathValue("action")).
		Str("remote", r.RemoteAddr).Msg("status page action")
	writeJSON(w, http.StatusOK, actionResponse{Job: name, Action: r.PathValue("action"), OK: true})
}

// admitAction answers 404 when no admin token is configured (the actions
// do not exist) and 403 without the right bearer token, and reports
// whether the action may go ahead.
func (s *server) admitAction(w http.ResponseWriter, r *http.Request) bool {
	if s.tokens().Admin == "" {
		writeJSON(w, http.StatusNotFound, errorResponse{Error: "no such action"})
		return false
	}
	if !s.authorized(r) {
		s.refusals.Refused(r, "action without the admin token")
		writeJSON(w, http.StatusForbidden, errorResponse{
			Error: "forbidden: send the admin token as Authorization: Bearer <token>"})
		return false
	}
	return true
}

// authorized reports whether r carries the admin token as a bearer token,
// compared in constant time so response timing reveals nothing about it.
func (s *server) authorized(r *http.Request) bool {
	return tokenIs(bearer(r), s.tokens().Admin)
}

// bearer is the token of r's "Authorization: Bearer <token>" header, or "".
func bearer(r *http.Request) string {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

// tokenIs reports whether got is the configured token want, in constant
// time; an unset (empty) token matches nothing.
func tokenIs(got, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}
