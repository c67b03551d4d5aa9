package web

import (
	"bytes"
	"html/template"
	"net/http"
	"strings"
	"time"
)

// indexData is what assets/templates/index.html renders.
type indexData struct {
	Admin    bool
	Now      time.Time
	Jobs     []Job
	Replicas []Replica
	Error    string
}

// jobData is what assets/templates/job.html renders.
type jobData struct {
	Admin  bool
	Now    time.Time
	Detail JobDetail
	Error  string
	// LiveOutput: the source follows live output (output.go).
	LiveOutput bool
}

// parseTemplates parses the embedded templates. They are fixed at build
// time, and TestTemplatesParse covers them, so a failure is a build defect.
func parseTemplates() *template.Template {
	funcs := template.FuncMap{
		"time":     formatTime,
		"seconds":  formatSeconds,
		"next":     formatNext,
		"offset":   formatOffset,
		"token":    formatToken,
		"exit":     formatExit,
		"join":     strings.Join,
		"interval": func() int64 { return PollInterval.Milliseconds() },
		// the history at a glance (glance.go)
		"cell":        cellClass,
		"cellTitle":   cellTitle,
		"oldestFirst": oldestFirst,
		"rate":        formatRate,
		"nextIn":      formatNextIn,
	}
	return template.Must(template.New("").Funcs(funcs).ParseFS(assets, "assets/templates/*.html"))
}

func (s *server) indexPage(w http.ResponseWriter, r *http.Request) {
	data := indexData{Admin: s.tokens().Admin != "", Now: s.opts.Now()}
	code := http.StatusOK
	jobs, err := s.src.Jobs(r.Context())
	if err == nil {
		data.Jobs = jobs
		data.Replicas, err = s.src.Replicas(r.Context())
	}
	if err != nil {
		data.Error, code = err.Error(), s.failure(w, r, err)
	}
	s.render(w, code, "index.html", data)
}

func (s *server) jobPage(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	data := jobData{Admin: s.tokens().Admin != "", Now: s.opts.Now(), LiveOutput: s.output != nil}
	code := http.StatusOK
	d, err := s.src.Job(r.Context(), name)
	if err != nil {
		data.Detail.Name, data.Error, code = name, err.Error(), s.failure(w, r, err)
	} else {
		data.Detail = d
	}
	s.render(w, code, "job.html", data)
}

// render executes a template into a buffer first, so a template error
// yields a clean 500 instead of half a page.
func (s *server) render(w http.ResponseWriter, code int, name string, data any) {
	var buf bytes.Buffer
	if err := s.tmpl.ExecuteTemplate(&buf, name, data); err != nil {
		s.opts.Logger.Error().Err(err).Str("template", name).Msg("status page: render failed")
		http.Error(w, "internal error rendering the page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write(buf.Bytes())
}
