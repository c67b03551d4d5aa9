package web

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"
)

// backfillRequest is the body of POST /api/jobs/{name}/backfill.
type backfillRequest struct {
	From   *time.Time `json:"from"`
	To     *time.Time `json:"to"`
	DryRun bool       `json:"dry_run"`
}

// backfillResponse is its answer: the ticks started (or, dry, listed).
type backfillResponse struct {
	Job    string      `json:"job"`
	Ticks  []time.Time `json:"ticks"`
	DryRun bool        `json:"dry_run"`
}

// maxBackfillBody bounds the request's body.
const maxBackfillBody = 4 << 10

// apiBackfill serves POST /api/jobs/{name}/backfill (admin token): 400
// naming the field for a bad body or range, 409 while a backfill runs.
func (s *server) apiBackfill(w http.ResponseWriter, r *http.Request) {
	if !s.admitAction(w, r) {
		return
	}
	var req backfillRequest
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBackfillBody))
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	switch {
	case err != nil:
		writeJSON(w, http.StatusBadRequest, definitionErrorResponse{Error: "want a JSON object {\"from\": TIME, \"to\": TIME, \"dry_run\": BOOL}: " + err.Error(), Field: "body"})
		return
	case req.From == nil:
		writeJSON(w, http.StatusBadRequest, definitionErrorResponse{Error: "from is required (RFC 3339)", Field: "from"})
		return
	case req.To == nil:
		writeJSON(w, http.StatusBadRequest, definitionErrorResponse{Error: "to is required (RFC 3339)", Field: "to"})
		return
	}
	name := r.PathValue("name")
	ticks, err := s.src.Backfill(r.Context(), name, *req.From, *req.To, actor(r), req.DryRun)
	var de *DefinitionError
	switch {
	case errors.As(err, &de):
		writeJSON(w, http.StatusBadRequest, definitionErrorResponse{Error: de.Msg, Field: de.Field})
		return
	case err != nil:
		s.apiError(w, r, err)
		return
	}
	if ticks == nil {
		ticks = []time.Time{}
	}
	s.opts.Logger.Info().Str("job", name).Int("ticks", len(ticks)).Bool("dry_run", req.DryRun).Str("remote", r.RemoteAddr).Msg("status page backfill")
	writeJSON(w, http.StatusOK, backfillResponse{Job: name, Ticks: ticks, DryRun: req.DryRun})
}
