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
// runtimeJobs.list gives them), without listing them for a window. A name
// filter (q.Match) costs a pass over the names, for the counts.
func selectJobs(cfg *config.Config, sorted []int, runtime []*runtimeJob, q web.JobQuery) web.JobSelection {
	if q.Source == SourceRuntime {
		sorted = nil
	}
	if q.Source == SourceFile {
		runtime = nil
	}
	file := func(i int) web.JobRef { return web.JobRef{Name: cfg.Jobs[i].Name, Source: SourceFile, Index: i} }
	run := func(i int) web.JobRef { return web.JobRef{Name: runtime[i].Name, Source: SourceRuntime} }
	if q.After == "" && q.Limit <= 0 { // all of them, in the page's order
		var sel web.JobSelection
		for i := range cfg.Jobs {
			if ref := file(i); q.Matches(ref) { // Matches checks the source
				sel.Refs = append(sel.Refs, ref)
			}
		}
		for i := range runtime {
			if ref := run(i); q.Matches(ref) {
				sel.Refs = append(sel.Refs, ref)
			}
		}
		sel.Total = len(sel.Refs)
		return sel
	}
	f := sort.Search(len(sorted), func(i int) bool { return cfg.Jobs[sorted[i]].Name > q.After })
	r := sort.Search(len(runtime), func(i int) bool { return runtime[i].Name > q.After })
	sel := web.JobSelection{Total: len(sorted) + len(runtime), Before: f + r}
	if q.Match != "" {
		sel.Total, sel.Before = 0, 0
		count := func(n, before int, ref func(int) web.JobRef) {
			for i := range n {
				if q.Matches(ref(i)) {
					sel.Total++
					if i < before {
						sel.Before++
					}
				}
			}
		}
		count(len(sorted), f, func(i int) web.JobRef { return file(sorted[i]) })
		count(len(runtime), r, run)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = sel.Total
	}
	for len(sel.Refs) < limit && (f < len(sorted) || r < len(runtime)) {
		var ref web.JobRef
		if r == len(runtime) || f < len(sorted) && cfg.Jobs[sorted[f]].Name <= runtime[r].Name {
			ref = file(sorted[f])
			f++
		} else {
			ref = run(r)
			r++
		}
		if q.Matches(ref) {
			sel.Refs = append(sel.Refs, ref)
		}
	}
	return sel
}
