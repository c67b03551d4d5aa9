package main

import "testing"

func TestSpreadOf(t *testing.T) {
	reps := func(runs ...int) []replicaSummary {
		var out []replicaSummary
		for _, n := range runs {
			out = append(out, replicaSummary{WindowRuns: n})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		in   []replicaSummary
		want spread
	}{
		{"none", nil, spread{}},
		{"one", reps(7), spread{Min: 7, Max: 7, MaxOverMin: 1}},
		{"uneven", reps(300, 100, 200), spread{Min: 100, Max: 300, MaxOverMin: 3}},
		{"idle replica", reps(0, 50, 50), spread{Min: 0, Max: 50}},
	} {
		if got := spreadOf(tc.in); got != tc.want {
			t.Errorf("%s: spreadOf = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
