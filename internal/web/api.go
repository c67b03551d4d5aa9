package web

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
)

// jobsResponse is the body of GET /api/jobs. NextAfter, set when a limit
// left jobs out, is the after= of the next page.
type jobsResponse struct {
	Jobs      []Job  `json:"jobs"`
	NextAfter string `json:"next_after,omitempty"`
	// Total is how many jobs there are of the source asked (all without
	// one), on every page.
	Total int `json:"total"`
}

// runsResponse is the body of GET /api/jobs/{name}/runs.
type runsResponse struct {
	Runs []Run `json:"runs"`
}

// replicasResponse is the body of GET /api/replicas.
type replicasResponse struct {
	Replicas []Replica `json:"replicas"`
}

// errorResponse is the body of every API error.
type errorResponse struct {
	Error string `json:"error"`
}

// apiJobs serves GET /api/jobs[?source=file|runtime&q=TEXT&limit=N&after=NAME]:
// q keeps the jobs whose names contain TEXT; with limit or after, the jobs
// are sorted by name and paged.
func (s *server) apiJobs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	source, after := q.Get("source"), q.Get("after")
	limit := 0
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeJSON(w, http.StatusBadRequest, definitionErrorResponse{Error: "limit: want a positive number, got " + strconv.Quote(v), Field: "limit"})
			return
		}
		limit = n
	}
	if source != "" && source != "file" && source != "runtime" {
		writeJSON(w, http.StatusBadRequest, definitionErrorResponse{Error: "source: want file or runtime, got " + strconv.Quote(source), Field: "source"})
		return
	}
	jq := JobQuery{Source: source, After: after, Match: q.Get("q")}
	if limit > 0 {
		jq.Limit = limit + 1 // one more tells whether a next page follows
	}
	list, err := s.src.Jobs(r.Context(), jq)
	if err != nil {
		s.apiError(w, r, err)
		return
	}
	out := list.Jobs
	for i := range out {
		out[i].RecentRuns = nonNil(out[i].RecentRuns)
	}
	resp := jobsResponse{Jobs: nonNil(out), Total: list.Total}
	if limit > 0 && len(out) > limit {
		resp.Jobs, resp.NextAfter = out[:limit], out[limit-1].Name
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *server) apiJob(w http.ResponseWriter, r *http.Request) {
	d, err := s.src.Job(r.Context(), r.PathValue("name"))
	if err != nil {
		s.apiError(w, r, err)
		return
	}
	if d.Revision > 0 {
		w.Header().Set("ETag", etag(d.Revision))
	}
	writeJSON(w, http.StatusOK, normalizeDetail(d))
}

func (s *server) apiRuns(w http.ResponseWriter, r *http.Request) {
	d, err := s.src.Job(r.Context(), r.PathValue("name"))
	if err != nil {
		s.apiError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, runsResponse{Runs: nonNil(d.Runs)})
}

func (s *server) apiReplicas(w http.ResponseWriter, r *http.Request) {
	reps, err := s.src.Replicas(r.Context())
	if err != nil {
		s.apiError(w, r, err)
		return
	}
	reps = nonNil(reps)
	for i := range reps {
		reps[i].Running = nonNil(reps[i].Running)
		if reps[i].Labels == nil {
			reps[i].Labels = map[string]string{}
		}
	}
	writeJSON(w, http.StatusOK, replicasResponse{Replicas: reps})
}

// apiError answers with the error's text (the API's readers are the
// cluster's operators, who need the cause) and the code failure gives.
func (s *server) apiError(w http.ResponseWriter, r *http.Request, err error) {
	writeJSON(w, s.failure(w, r, err), errorResponse{Error: err.Error()})
}

// failure is the HTTP status for a Source error: 404 for ErrNotFound, 503
// (with Retry-After) for ErrUnavailable, whose log line the Source's
// wrapper (watched) writes once per state, 409 for ErrConflict (a trigger
// of a job that runs), and 500, logged, otherwise.
func (s *server) failure(w http.ResponseWriter, r *http.Request, err error) int {
	switch {
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrUnavailable):
		w.Header().Set("Retry-After", retryAfter)
		return http.StatusServiceUnavailable
	case errors.Is(err, ErrConflict):
		return http.StatusConflict // a state, such as a run in progress: nothing failed
	}
	s.opts.Logger.Error().Err(err).Str("path", r.URL.Path).Msg("status page: source failed")
	return http.StatusInternalServerError
}

// writeJSON writes v with status code. API responses are never cached: they
// are live state.
func writeJSON(w http.ResponseWriter, code int, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v) // a write error means the client left; nothing to do
}

// normalizeDetail makes empty lists encode as [] instead of null, so API
// readers can iterate without a null check.
func normalizeDetail(d JobDetail) JobDetail {
	d.Runs = nonNil(d.Runs)
	d.RecentRuns = nonNil(d.RecentRuns)
	return d
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
