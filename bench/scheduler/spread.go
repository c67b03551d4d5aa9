package main

import "fmt"

// spread is how evenly the checked window's runs fell on the replicas: the
// fewest and the most runs any one replica made. It is computed over the
// window only, so that the uneven start and stop of the replicas (margins)
// do not count; a run of a job-tick that ran twice counts on both replicas.
type spread struct {
	Min int `json:"min"`
	Max int `json:"max"`
	// MaxOverMin is Max/Min (0 when a replica ran nothing): 1 is an even
	// split.
	MaxOverMin float64 `json:"max_over_min"`
}

// spreadOf returns the spread of the replicas' window runs; the zero
// spread for no replica.
func spreadOf(reps []replicaSummary) spread {
	if len(reps) == 0 {
		return spread{}
	}
	s := spread{Min: reps[0].WindowRuns, Max: reps[0].WindowRuns}
	for _, r := range reps[1:] {
		s.Min = min(s.Min, r.WindowRuns)
		s.Max = max(s.Max, r.WindowRuns)
	}
	if s.Min > 0 {
		s.MaxOverMin = float64(s.Max) / float64(s.Min)
	}
	return s
}

// String is the spread as the summary and the sweep table print it.
func (s spread) String() string {
	return fmt.Sprintf("%d–%d (×%.2f)", s.Min, s.Max, s.MaxOverMin)
}
