package web

import (
	"embed"
	"html/template"
	"io/fs"
	"net/http"
	"time"

	"github.com/rs/zerolog"
)

//go:embed assets
var assets embed.FS

// PollInterval is how often the page asks the API for fresh data. The issue
// allows at most 2 s; 1 s leaves room for a loaded server to still show a
// new run within 2 s.
const PollInterval = time.Second

// contentSecurityPolicy allows only same-origin resources: no inline script
// or style, no framing. It backs up the escaping: even markup that slipped
// into the page could not run.
const contentSecurityPolicy = "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'"

// Options configures Handler. The zero value serves a read-only page.
type Options struct {
	// AdminToken enables the actions (trigger, suspend, resume) when set;
	// requests must carry it as "Authorization: Bearer <token>". Empty: the
	// action routes answer 404 and the page shows no buttons.
	AdminToken string
	// ReadToken, when set, closes every route but /static/ and POST /login
	// to requests without it or the admin token (see readauth.go). Empty:
	// reading is open.
	ReadToken string
	// Tokens, when set, is asked for the tokens at every request instead of
	// AdminToken and ReadToken, so that a reload that changes them takes
	// effect at once.
	Tokens func() Tokens
	// Metrics, when set, is served at GET /metrics behind the read token.
	Metrics http.Handler
	// Refusals, when set, logs the refused requests (shared with other
	// checks in front of the handler); nil: a RefusalLog on Logger.
	Refusals *RefusalLog
	// Logger receives source and template errors, and the refused requests
	// (see refusals.go). Zero value: discarded.
	Logger zerolog.Logger
	// Now returns the current time, for "next run in ..." texts. Nil:
	// time.Now.
	Now func() time.Time
}

// server holds one Handler's state.
type server struct {
	src      Source
	defs     Definitions   // src's, when it has runtime jobs; nil otherwise
	output   Output        // src's, when it follows live output; nil otherwise
	streams  chan struct{} // the output streams open (output.go)
	opts     Options
	tmpl     *template.Template
	refusals *RefusalLog
}

// Handler returns the status page and the /api/ routes over src. Mount it at
// "/" of the daemon's mux; more specific routes there (/metrics, /healthz)
// keep precedence.
func Handler(src Source, opts Options) http.Handler {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &server{src: &watched{Source: src, log: opts.Logger}, opts: opts, tmpl: parseTemplates(),
		refusals: opts.Refusals}
	s.defs, _ = src.(Definitions)
	s.output, _ = src.(Output)
	s.streams = make(chan struct{}, maxOutputStreams)
	if s.refusals == nil {
		s.refusals = NewRefusalLog(opts.Logger)
	}
	static, err := fs.Sub(assets, "assets/static")
	if err != nil {
		panic(err) // the embed directive guarantees the directory
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.indexPage)
	mux.HandleFunc("GET /jobs/{name}", s.jobPage)
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /api/jobs", s.apiJobs)
	mux.HandleFunc("GET /api/jobs/{name}", s.apiJob)
	mux.HandleFunc("GET /api/jobs/{name}/runs", s.apiRuns)
	mux.HandleFunc("GET /api/jobs/{name}/revisions", s.apiRevisions)
	mux.HandleFunc("GET /api/jobs/{name}/output", s.apiOutput)
	mux.HandleFunc("PUT /api/jobs/{name}", s.apiPutJob)
	mux.HandleFunc("DELETE /api/jobs/{name}", s.apiDeleteJob)
	mux.HandleFunc("GET /api/replicas", s.apiReplicas)
	mux.HandleFunc("POST /api/jobs/{name}/{action}", s.apiAction)
	mux.HandleFunc("POST /api/jobs/{name}/backfill", s.apiBackfill)
	mux.HandleFunc("POST /login", s.login)
	if opts.Metrics != nil {
		mux.Handle("GET /metrics", opts.Metrics)
	}
	return securityHeaders(s.readGuard(mux))
}

// securityHeaders sets the headers every response carries.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		next.ServeHTTP(w, r)
	})
}
