package app

import (
	"slices"
	"testing"

	"github.com/cronlock/cronlock/internal/config"
)

// TestInEffectUndoesFailedChanges: after a reload, the jobs in effect are
// the new file's, except that a failed replacement keeps the previous
// version, a failed add is left out, and a failed removal stays; without
// failures they are the new file's own slice, not a copy.
func TestInEffectUndoesFailedChanges(t *testing.T) {
	t.Parallel()
	next := []config.Job{{Name: "a", Schedule: "@daily"}, {Name: "b", Schedule: "@hourly"}, {Name: "c"}}
	if got := inEffect(next, nil, nil); &got[0] != &next[0] {
		t.Error("without failures, the jobs in effect are a copy of the file's")
	}
	prevB := config.Job{Name: "b", Schedule: "@weekly"}
	got := inEffect(next, map[string]*config.Job{"b": &prevB, "c": nil}, []config.Job{{Name: "gone"}})
	want := []config.Job{next[0], prevB, {Name: "gone"}}
	if !slices.EqualFunc(got, want, func(x, y config.Job) bool { return x.Name == y.Name && x.Schedule == y.Schedule }) {
		t.Errorf("in effect %+v, want %+v", got, want)
	}
}
