package main

import (
	"strings"
	"testing"
)

// TestValidateBadFiles: every kind of mistake exits 2 and names the file,
// the line and the field on stderr.
func TestValidateBadFiles(t *testing.T) {
	t.Parallel()
	const head = "http: {listen: \"\"}\njobs:\n" // lines 1-2
	for _, tc := range []struct {
		name string
		yaml string
		want []string // substrings of stderr; "FILE" is the file's path
	}{
		{"unknown key", head + "  - name: a\n    schedule: \"@daily\"\n    shell: \"true\"\n    colour: blue\n",
			[]string{"FILE:6: jobs[0].colour"}},
		{"unknown top-level key", "natz: {}\n" + head + "  - name: a\n    schedule: \"@daily\"\n    shell: \"true\"\n",
			[]string{"FILE:1: natz"}},
		{"bad duration", "lock:\n  lease: 20\n" + head + "  - name: a\n    schedule: \"@daily\"\n    shell: \"true\"\n",
			[]string{"FILE:2: lock.lease"}},
		{"bad job duration", head + "  - name: a\n    schedule: \"@daily\"\n    shell: \"true\"\n    timeout: 5 minutes\n",
			[]string{"FILE:6: jobs[0].timeout"}},
		{"bad cron spec", head + "  - name: a\n    schedule: \"0 61 * * * *\"\n    shell: \"true\"\n",
			[]string{"FILE:4: jobs[0].schedule", "61"}},
		{"bad timezone", head + "  - name: a\n    schedule: \"@daily\"\n    timezone: Mars/Olympus\n    shell: \"true\"\n",
			[]string{"FILE:5: jobs[0].timezone", "Mars/Olympus"}},
		{"duplicate job name", head + "  - name: a\n    schedule: \"@daily\"\n    shell: \"true\"\n  - name: a\n    schedule: \"@hourly\"\n    shell: \"true\"\n",
			[]string{"FILE:6: jobs[1].name", `"a"`}},
		{"both command and shell", head + "  - name: a\n    schedule: \"@daily\"\n    shell: \"true\"\n    command: [\"true\"]\n",
			[]string{"FILE:5: jobs[0].", "command", "shell"}},
		{"schedule that never fires", head + "  - name: a\n    schedule: \"0 0 30 2 *\"\n    shell: \"true\"\n",
			[]string{`FILE:4: jobs[0].schedule: job "a": schedule "0 0 30 2 *" never fires`}},
		{"several errors at once", head + "  - name: a\n    schedule: \"@fortnightly\"\n    shell: \"true\"\n    retries: -1\n",
			[]string{"FILE:4: jobs[0].schedule", "FILE:6: jobs[0].retries"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := writeFile(t, t.TempDir(), "cronlock.yaml", tc.yaml)
			r := cronlock(t, nil, "validate", "-c", path)
			if r.code != 2 {
				t.Errorf("exit %d, want 2\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
			for _, w := range tc.want {
				if w = strings.ReplaceAll(w, "FILE", path); !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
			if r.stdout != "" {
				t.Errorf("stdout not empty:\n%s", r.stdout)
			}
		})
	}
}
