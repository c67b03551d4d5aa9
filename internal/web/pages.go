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
	// Paged is set when the page shows a window of the jobs (more than
	// IndexPageJobs): First and Last number its rows among Total, After
	// is the after= it was asked with and NextAfter the next page's ("":
	// the last page).
	Paged              bool
	First, Last, Total int
	After, NextAfter   string
	PageLimit          int
	// Match is the page's name filter (q=), shown on a paged page or
	// whenever it is set; a filtered page is always paged.
	Match string
}

// IndexPageJobs is how many jobs the status page shows at most: a
// configuration with more is shown a page at a time, sorted by name. A row
// costs a read of the job's record at every poll, and a page of 100,000
// rows took 7 s and 320 MB of the replica's memory to answer, every
// second the page was open.
const IndexPageJobs = 500

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
	err := s.indexJobs(r, &data)
	if err == nil {
		data.Replicas, err = s.src.Replicas(r.Context())
	}
	if err != nil {
		data.Error, code = err.Error(), s.failure(w, r, err)
	}
	s.render(w, code, "index.html", data)
}

// indexJobs fills in the index page's jobs: all of them, in the page's
// order, up to IndexPageJobs; beyond, or with a name filter (q=), the page
// of IndexPageJobs after the request's after=, sorted by name. A first
// query of one job tells which.
func (s *server) indexJobs(r *http.Request, data *indexData) error {
	ctx, after, match := r.Context(), r.URL.Query().Get("after"), r.URL.Query().Get("q")
	if after == "" && match == "" {
		probe, err := s.src.Jobs(ctx, JobQuery{Limit: 1})
		if err != nil {
			return err
		}
		if probe.Total <= IndexPageJobs {
			all, err := s.src.Jobs(ctx, JobQuery{})
			data.Jobs = all.Jobs
			return err
		}
	}
	list, err := s.src.Jobs(ctx, JobQuery{After: after, Match: match, Limit: IndexPageJobs + 1})
	if err != nil {
		return err
	}
	data.Paged, data.Total, data.After, data.Match, data.PageLimit = true, list.Total, after, match, IndexPageJobs
	data.Jobs = list.Jobs
	if len(data.Jobs) > IndexPageJobs {
		data.Jobs = data.Jobs[:IndexPageJobs]
		data.NextAfter = data.Jobs[IndexPageJobs-1].Name
	}
	data.First, data.Last = list.Before+1, list.Before+len(data.Jobs)
	return nil
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
