package app

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cronlock/cronlock/internal/config"
	"github.com/cronlock/cronlock/internal/web"
)

// selectJobs, which searches the sorted jobs, selects what web.SelectJobs
// selects from the whole list, for every source, after and limit.
func TestSelectJobsIsSelectJobs(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		cfg := &config.Config{}
		var runtime []*runtimeJob
		var refs []web.JobRef
		names := rng.Perm(40)
		for i, n := range names[:rng.IntN(20)] {
			cfg.Jobs = append(cfg.Jobs, config.Job{Name: fmt.Sprintf("j%02d", n)})
			refs = append(refs, web.JobRef{Name: cfg.Jobs[i].Name, Source: SourceFile, Index: i})
		}
		for _, n := range names[20 : 20+rng.IntN(20)] {
			runtime = append(runtime, &runtimeJob{})
			runtime[len(runtime)-1].Name = fmt.Sprintf("j%02d", n)
		}
		slices.SortFunc(runtime, func(a, b *runtimeJob) int { return strings.Compare(a.Name, b.Name) })
		for _, rj := range runtime {
			refs = append(refs, web.JobRef{Name: rj.Name, Source: SourceRuntime})
		}
		var sorted byName
		for _, q := range []web.JobQuery{{}, {Source: SourceFile}, {Source: SourceRuntime},
			{Limit: 1 + rng.IntN(10)}, {After: fmt.Sprintf("j%02d", rng.IntN(40))},
			{Source: []string{SourceFile, SourceRuntime}[rng.IntN(2)], After: fmt.Sprintf("j%02d", rng.IntN(40)), Limit: 1 + rng.IntN(10)},
			{Match: fmt.Sprint(rng.IntN(10))}, {Match: fmt.Sprint(rng.IntN(4)), Limit: 1 + rng.IntN(5), After: fmt.Sprintf("j%02d", rng.IntN(40))}} {
			got := selectJobs(cfg, sorted.of(cfg), runtime, q)
			want := web.SelectJobs(slices.Clone(refs), q)
			if len(got.Refs) == 0 && len(want.Refs) == 0 {
				got.Refs, want.Refs = nil, nil
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("round %d, %+v: selectJobs\n%+v\nSelectJobs\n%+v", round, q, got, want)
			}
		}
	}
}
