package app

import (
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/cronlock/cronlock/internal/config"
	"github.com/cronlock/cronlock/internal/web"
)

// byName is the file jobs of one configuration sorted by name, made once
// per configuration (a reload makes another): a window of the status page
// then costs two searches and its own jobs, not a list and a sort of every
// job at every poll (at 100,000 jobs, 8 MB and 30 ms a poll).
type byName struct {
	mu    sync.Mutex
	cfg   *config.Config
	order []int // indices into cfg.Jobs
}

// of returns cfg's jobs' indices sorted by name.
func (b *byName) of(cfg *config.Config) []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cfg != cfg {
		order := make([]int, len(cfg.Jobs))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(x, y int) int { return strings.Compare(cfg.Jobs[x].Name, cfg.Jobs[y].Name) })
		b.cfg, b.order = cfg, order
	}
	return b.order
}

// selectJobs is web.SelectJobs over the file jobs of cfg (sorted: their
// indices by name) followed by the runtime jobs (sorted by name, as
// runtimeJobs.list gives them), without listing them for a window.
func selectJobs(cfg *config.Config, sorted []int, runtime []*runtimeJob, q web.JobQuery) web.JobSelection {
	files, runs := len(cfg.Jobs), len(runtime)
	switch q.Source {
	case SourceFile:
		runtime, runs = nil, 0
	case SourceRuntime:
		sorted, files = nil, 0
	}
	sel := web.JobSelection{Total: files + runs}
	if q.After == "" && q.Limit <= 0 { // all of them, in the page's order
		sel.Refs = make([]web.JobRef, 0, sel.Total)
		for i := range files {
			sel.Refs = append(sel.Refs, web.JobRef{Name: cfg.Jobs[i].Name, Source: SourceFile, Index: i})
		}
		for _, rj := range runtime {
			sel.Refs = append(sel.Refs, web.JobRef{Name: rj.Name, Source: SourceRuntime})
		}
		return sel
	}
	f := sort.Search(len(sorted), func(i int) bool { return cfg.Jobs[sorted[i]].Name > q.After })
	r := sort.Search(len(runtime), func(i int) bool { return runtime[i].Name > q.After })
	sel.Before = f + r
	limit := q.Limit
	if limit <= 0 {
		limit = sel.Total
	}
	for len(sel.Refs) < limit && (f < len(sorted) || r < len(runtime)) {
		if r == len(runtime) || f < len(sorted) && cfg.Jobs[sorted[f]].Name <= runtime[r].Name {
			sel.Refs = append(sel.Refs, web.JobRef{Name: cfg.Jobs[sorted[f]].Name, Source: SourceFile, Index: sorted[f]})
			f++
		} else {
			sel.Refs = append(sel.Refs, web.JobRef{Name: runtime[r].Name, Source: SourceRuntime})
			r++
		}
	}
	return sel
}
