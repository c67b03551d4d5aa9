package app

import (
	"net/http"
	"strings"

	"github.com/cronlock/cronlock/internal/web"
)

// handler serves
//
//   - /: the status page and its JSON API under /api/ (internal/web) over
//     the daemon; actions (trigger, suspend, resume) only with
//     http.admin_token, and reading only with http.read_token when it is
//     set (the tokens in effect, see webtokens.go). Before NATS is up, the
//     page shows why it is not ready;
//   - /metrics: the Prometheus registry (scheduler, Go runtime, process and
//     cronlock's own metrics), served by the web handler so that
//     http.read_token guards it like the page;
//   - /healthz: 200 while the process runs (liveness);
//   - /readyz: 200 only while NATS is connected and the scheduler is
//     running, 503 with a one-line reason otherwise (readiness): the stage
//     of start-up ("connecting to nats://...: <error>", "opening buckets:
//     <error>"), "not connected to NATS", or "shutting down".
func (d *Daemon) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", web.Handler(d.web, web.Options{
		Tokens:   d.webTokens,
		Metrics:  d.metricsHandler(), // behind http.read_token; metrics_listen serves it without
		Refusals: d.http.refusals,
		Logger:   d.log.With().Str("component", "web").Logger(),
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		switch {
		case !d.running.Load() || d.schedCtx.Err() != nil:
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte("not ready: " + oneLine(*d.stage.Load()) + "\n"))
		case !d.connected():
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte("not ready: not connected to NATS\n"))
		case !d.runtimeCaughtUp():
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte("not ready: scheduling the runtime jobs stored in NATS\n"))
		default:
			w.Write([]byte("ok\n"))
		}
	})
	return mux
}

// oneLine keeps the first line of s, so that a reason is one line.
func oneLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}
