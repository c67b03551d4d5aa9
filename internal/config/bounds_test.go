package config

import "testing"

// TestBounds: absurd values are refused with the field and its line; the
// bounds themselves are accepted.
func TestBounds(t *testing.T) {
	t.Parallel()
	const head = "jobs:\n  - name: a\n    schedule: \"@every 1h\"\n    shell: \"true\"\n" // lines 1-4
	for _, tc := range []struct {
		name, src string
		want      []want
	}{
		{"retries overflow", head + "    retries: 9223372036854775807\n", []want{{"5: jobs[0].retries", "must be at most 100, got 9223372036854775807"}}},
		{"timeout", head + "    timeout: 2562047h\n", []want{{"5: jobs[0].timeout", "must be at most 168h0m0s, got 2562047h0m0s"}}},
		{"retry_backoff", head + "    retry_backoff: 25h\n", []want{{"5: jobs[0].retry_backoff", "must be at most 24h0m0s"}}},
		{"starting_deadline", head + "    starting_deadline: 745h\n", []want{{"5: jobs[0].starting_deadline", "must be at most 744h0m0s"}}},
		{"jitter", head + "    jitter: 2562047h\n", []want{{"5: jobs[0].jitter", "must be at most 24h0m0s"}}},
		{"jitter over the interval", head + "    jitter: 1h\n", []want{{"5: jobs[0].jitter", "shortest interval between ticks (1h0m0s), got 1h0m0s"}}},
		{"grace", head + "    grace: 2h\n", []want{{"5: jobs[0].grace", "must be at most 1h0m0s"}}},
		{"every", "jobs:\n  - name: a\n    schedule: \"@every 2562047h\"\n    shell: \"true\"\n",
			[]want{{"3: jobs[0].schedule", "longer than 8784h0m0s (MaxEvery)"}}},
		{"shutdown_grace", "shutdown_grace: 25h\n" + head, []want{{"1: shutdown_grace", "must be at most 24h0m0s"}}},
		{"max_concurrent_runs", "max_concurrent_runs: 1000001\n" + head, []want{{"1: max_concurrent_runs", "must be at most 1000000"}}},
		{"lock.lease", "lock: {lease: 2h, renew: 1h}\n" + head, []want{{"1: lock.lease", "must be at most 1h0m0s"}}},
		{"history.size", "history: {size: 65}\n" + head, []want{{"1: history.size", "must be between 1 and 64"}}},
		{"history.output_tail", "history: {output_tail: 262145}\n" + head, []want{{"1: history.output_tail", "must be between 0 (keep no output) and 262144"}}},
		{"at the bounds", "shutdown_grace: 24h\nmax_concurrent_runs: 1000000\nlock: {lease: 1h, renew: 30m}\nhistory: {size: 64, output_tail: 262144}\n" +
			"jobs:\n  - name: a\n    schedule: \"@every 8784h\"\n    shell: \"true\"\n    retries: 100\n    timeout: 168h\n" +
			"    retry_backoff: 24h\n    starting_deadline: 744h\n    jitter: 24h\n    grace: 1h\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("bad.yaml", []byte(tc.src))
			checkErrors(t, err, tc.want)
		})
	}
}
