package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Live output: GET /api/jobs/{name}/output streams the output of the job's
// running runs as Server-Sent Events, read-authorized like every GET. Each
// message of a run's live output is one event "output" whose data is an
// OutputEvent in JSON; the last one of an attempt is an event "end". The
// stream carries only what is produced while it is open (nothing is
// stored); the page's job view appends it to a <pre>.

// Output is implemented by a Source that can follow live output; without
// it the route answers 404.
type Output interface {
	// FollowOutput follows the live output of the job called name (an
	// error matching ErrNotFound if there is none) until ctx is done or
	// the source stops, which closes the channel.
	FollowOutput(ctx context.Context, name string) (<-chan OutputEvent, error)
}

// OutputEvent is one message of a run's live output. Its JSON form is part
// of the public API: fields are only ever added, never renamed.
type OutputEvent struct {
	Owner   string    `json:"owner"`
	Tick    time.Time `json:"tick"`
	Token   uint64    `json:"token"`
	Attempt int       `json:"attempt"`
	Seq     uint64    `json:"seq"`
	// Data is the output (invalid UTF-8 shown as U+FFFD).
	Data string `json:"data"`
	// Dropped counts the bytes the replica dropped just before Data, Lost
	// the messages this stream missed; the page shows both in place.
	Dropped int64  `json:"dropped,omitempty"`
	Lost    uint64 `json:"lost,omitempty"`
	// End marks an attempt's last message, with the command's exit code
	// (absent if it did not exit) and error.
	End      bool   `json:"end,omitempty"`
	ExitCode *int   `json:"exit_code,omitempty"`
	Error    string `json:"error,omitempty"`
}

// Bounds of the output streams.
const (
	// maxOutputStreams is how many streams one server serves at once (each
	// holds a NATS subscription); more are answered 503.
	maxOutputStreams = 64
	// outputKeepalive is how often an idle stream sends a comment, so
	// that proxies and the write deadline do not end it.
	outputKeepalive = 15 * time.Second
	// outputWriteTimeout bounds each write to the stream's client.
	outputWriteTimeout = 30 * time.Second
)

var errTooManyStreams = errors.New("too many live output streams open")

func (s *server) apiOutput(w http.ResponseWriter, r *http.Request) {
	if s.output == nil {
		http.NotFound(w, r)
		return
	}
	select {
	case s.streams <- struct{}{}:
		defer func() { <-s.streams }()
	default:
		w.Header().Set("Retry-After", retryAfter)
		writeJSON(w, http.StatusServiceUnavailable, errorResponse{Error: errTooManyStreams.Error()})
		return
	}
	events, err := s.output.FollowOutput(r.Context(), r.PathValue("name"))
	if err != nil {
		s.apiError(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	send := func(chunk string) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(outputWriteTimeout))
		if _, err := fmt.Fprint(w, chunk); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	streamOutput(r.Context(), events, send)
}

// streamOutput sends events as SSE until they end, ctx is done or send
// fails; an opening comment says the stream follows.
func streamOutput(ctx context.Context, events <-chan OutputEvent, send func(string) bool) {
	if !send(": following\n\n") {
		return
	}
	keep := time.NewTicker(outputKeepalive)
	defer keep.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-keep.C:
			if !send(": keepalive\n\n") {
				return
			}
		case e, ok := <-events:
			if !ok {
				return
			}
			b, _ := json.Marshal(e) // plain fields: cannot fail
			name := "output"
			if e.End {
				name = "end"
			}
			if !send("event: " + name + "\ndata: " + string(b) + "\n\n") {
				return
			}
		}
	}
}
