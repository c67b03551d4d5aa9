package registry

import (
	"slices"
	"strings"

	"github.com/cronlock/cronlock/job"
)

// joinLabels is the labelsHeader value of labels ("" for none).
func joinLabels(labels map[string]string) string {
	pairs := make([]string, 0, len(labels))
	for k, v := range labels {
		pairs = append(pairs, k+"="+v)
	}
	slices.Sort(pairs)
	return strings.Join(pairs, ",")
}

// splitLabels parses a labelsHeader value; nil for none. A pair without
// '=' (from no release) is left out.
func splitLabels(h string) map[string]string {
	if h == "" {
		return nil
	}
	out := map[string]string{}
	for _, p := range strings.Split(h, ",") {
		if k, v, ok := strings.Cut(p, "="); ok {
			out[k] = v
		}
	}
	return out
}

// LiveMatching returns the ids of the live replicas (see Live) whose
// labels have every pair of on (job.Matches), sorted; with an empty on,
// all of them. A replica of a release from before labels has none, so it
// matches only an empty on.
func (r *Registry) LiveMatching(on map[string]string) []string {
	if len(on) == 0 {
		return r.Live()
	}
	now := r.clock.Now()
	r.othersMu.Lock()
	defer r.othersMu.Unlock()
	var out []string
	for _, a := range r.others {
		if Live(a.seen, now) && job.Matches(a.labels, on) {
			out = append(out, a.id)
		}
	}
	slices.Sort(out)
	return out
}

// Labels are this replica's own labels.
func (r *Registry) Labels() map[string]string { return r.self.Labels }
