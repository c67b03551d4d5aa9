package web

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Definitions is what a Source that has runtime jobs implements too: the
// changes of PUT and DELETE /api/jobs/{name} and the revisions of GET
// /api/jobs/{name}/revisions. Without it (or while it answers
// ErrDisabled) those routes answer 404.
type Definitions interface {
	// PutJob validates body (a JSON definition) and stores it as the job
	// name's, by by; ifMatch > 0 requires the stored revision to be it.
	PutJob(ctx context.Context, name string, body []byte, ifMatch uint64, by string) (uint64, error)
	// DeleteJob removes the runtime job name, by by.
	DeleteJob(ctx context.Context, name string, ifMatch uint64, by string) (uint64, error)
	// JobRevisions lists the job's kept revisions, oldest first.
	JobRevisions(ctx context.Context, name string) ([]Revision, error)
}

// Errors of Definitions that the handler maps to HTTP statuses.
var (
	// ErrDisabled: runtime jobs are not enabled (404, with the error's text
	// saying how to enable them).
	ErrDisabled = errors.New("runtime jobs are not enabled")
	// ErrConflict: the change conflicts with what exists: a file job's
	// name, the runtime_jobs.max_jobs limit (409).
	ErrConflict = errors.New("conflict")
	// ErrPrecondition: If-Match names another revision than the stored
	// one (412).
	ErrPrecondition = errors.New("the stored revision differs from If-Match")
)

// DefinitionError is a definition that does not validate (400): Field is
// the key at fault ("schedule"), "" when the body as a whole is.
type DefinitionError struct {
	Field string
	Msg   string
}

func (e *DefinitionError) Error() string { return e.Msg }

// Revision is one revision of a runtime job's definition.
type Revision struct {
	Revision   uint64          `json:"revision"`
	Operation  string          `json:"operation"` // "put" or "delete"
	By         string          `json:"by"`
	At         time.Time       `json:"at"`
	Definition json.RawMessage `json:"definition,omitempty"`
}

// maxDefinitionBody bounds a PUT's body: a definition with the largest
// payload (64 KiB) fits many times over.
const maxDefinitionBody = 1 << 20

// defaultActor is a change's "by" without an X-Cronlock-Actor header.
const defaultActor = "api"

// changeResponse is the body of a successful PUT or DELETE.
type changeResponse struct {
	Job      string `json:"job"`
	Revision uint64 `json:"revision"`
	Deleted  bool   `json:"deleted,omitempty"`
}

// definitionErrorResponse is the body of a 400 for a bad definition.
type definitionErrorResponse struct {
	Error string `json:"error"`
	Field string `json:"field"`
}

// revisionsResponse is the body of GET /api/jobs/{name}/revisions.
type revisionsResponse struct {
	Revisions []Revision `json:"revisions"`
}

// definitions returns the Source's Definitions after the admin token
// check, or answers and returns nil.
func (s *server) definitions(w http.ResponseWriter, r *http.Request) Definitions {
	defs := s.defs
	if s.tokens().Admin == "" || defs == nil {
		writeJSON(w, http.StatusNotFound, errorResponse{Error: "no such route: runtime jobs need an admin token and runtime_jobs enabled"})
		return nil
	}
	if !s.authorized(r) {
		s.refusals.Refused(r, "runtime job change without the admin token")
		writeJSON(w, http.StatusForbidden, errorResponse{Error: "forbidden: send the admin token as Authorization: Bearer <token>"})
		return nil
	}
	return defs
}

// apiPutJob serves PUT /api/jobs/{name}.
func (s *server) apiPutJob(w http.ResponseWriter, r *http.Request) {
	defs := s.definitions(w, r)
	if defs == nil {
		return
	}
	ifMatch, ok := s.ifMatch(w, r)
	if !ok {
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxDefinitionBody))
	if err != nil {
		writeJSON(w, http.StatusRequestEntityTooLarge, errorResponse{Error: "the definition is over 1 MiB"})
		return
	}
	name := r.PathValue("name")
	rev, err := defs.PutJob(r.Context(), name, body, ifMatch, actor(r))
	if err != nil {
		s.changeError(w, r, err)
		return
	}
	s.opts.Logger.Info().Str("job", name).Uint64("revision", rev).Str("by", actor(r)).Str("remote", r.RemoteAddr).Msg("runtime job put")
	w.Header().Set("ETag", etag(rev))
	writeJSON(w, http.StatusOK, changeResponse{Job: name, Revision: rev})
}

// apiDeleteJob serves DELETE /api/jobs/{name}.
func (s *server) apiDeleteJob(w http.ResponseWriter, r *http.Request) {
	defs := s.definitions(w, r)
	if defs == nil {
		return
	}
	ifMatch, ok := s.ifMatch(w, r)
	if !ok {
		return
	}
	name := r.PathValue("name")
	rev, err := defs.DeleteJob(r.Context(), name, ifMatch, actor(r))
	if err != nil {
		s.changeError(w, r, err)
		return
	}
	s.opts.Logger.Info().Str("job", name).Uint64("revision", rev).Str("by", actor(r)).Str("remote", r.RemoteAddr).Msg("runtime job deleted")
	w.Header().Set("ETag", etag(rev))
	writeJSON(w, http.StatusOK, changeResponse{Job: name, Revision: rev, Deleted: true})
}

// apiRevisions serves GET /api/jobs/{name}/revisions (read access).
func (s *server) apiRevisions(w http.ResponseWriter, r *http.Request) {
	if s.defs == nil {
		writeJSON(w, http.StatusNotFound, errorResponse{Error: "no runtime jobs here"})
		return
	}
	revs, err := s.defs.JobRevisions(r.Context(), r.PathValue("name"))
	if err != nil {
		s.changeError(w, r, err)
		return
	}
	if len(revs) > 0 {
		w.Header().Set("ETag", etag(revs[len(revs)-1].Revision))
	}
	writeJSON(w, http.StatusOK, revisionsResponse{Revisions: nonNil(revs)})
}

// ifMatch reads the If-Match header: a revision, bare or as an ETag
// ("12"); 0 when absent.
func (s *server) ifMatch(w http.ResponseWriter, r *http.Request) (uint64, bool) {
	v := strings.TrimSpace(r.Header.Get("If-Match"))
	if v == "" {
		return 0, true
	}
	rev, err := strconv.ParseUint(strings.Trim(strings.TrimPrefix(v, "W/"), `"`), 10, 64)
	if err != nil || rev == 0 {
		writeJSON(w, http.StatusBadRequest, definitionErrorResponse{Error: "If-Match: want a revision such as \"12\", got " + strconv.Quote(v), Field: "If-Match"})
		return 0, false
	}
	return rev, true
}

// changeError answers a failed change with its status.
func (s *server) changeError(w http.ResponseWriter, r *http.Request, err error) {
	var de *DefinitionError
	switch {
	case errors.As(err, &de):
		writeJSON(w, http.StatusBadRequest, definitionErrorResponse{Error: de.Msg, Field: de.Field})
	case errors.Is(err, ErrDisabled):
		writeJSON(w, http.StatusNotFound, errorResponse{Error: err.Error()})
	case errors.Is(err, ErrConflict):
		writeJSON(w, http.StatusConflict, errorResponse{Error: err.Error()})
	case errors.Is(err, ErrPrecondition):
		writeJSON(w, http.StatusPreconditionFailed, errorResponse{Error: err.Error()})
	default:
		s.apiError(w, r, err)
	}
}

// actor is who a change is by: the X-Cronlock-Actor header, else "api".
func actor(r *http.Request) string {
	if a := strings.TrimSpace(r.Header.Get("X-Cronlock-Actor")); a != "" {
		if len(a) > 200 {
			a = a[:200]
		}
		return a
	}
	return defaultActor
}

func etag(rev uint64) string { return `"` + strconv.FormatUint(rev, 10) + `"` }
