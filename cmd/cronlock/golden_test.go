package main

import (
	"testing"
)

// from is the --from of the golden outputs: the night Berlin springs
// forward.
const from = "2026-03-28T23:59:55Z"

func TestGoldenNext(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{"next_all.golden", []string{"next", "-c", "testdata/schedules.yaml", "--from", from, "-n", "3"}},
		{"next_job.golden", []string{"next", "-c", "testdata/schedules.yaml", "--from", from, "berlin.night"}},
		{"next_never.golden", []string{"next", "--config", "testdata/schedules.yaml", "--from", "2097-01-01T00:00:00Z", "leap.day"}},
		{"validate.golden", []string{"validate", "-c", "testdata/schedules.yaml", "--from", from}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			r := cronlock(t, nil, tc.args...)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("cronlock %q: exit %d\n%s", tc.args, r.code, r.stderr)
			}
			golden(t, tc.golden, r.stdout)
		})
	}
}
