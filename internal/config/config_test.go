package config

import (
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// job0 is a valid jobs section; files that test other sections end with it.
// It starts with the jobs key, so add its 4 lines to line numbers after it.
const job0 = `jobs:
  - name: a
    schedule: "@every 10s"
    shell: "true"
`

// errLines returns the lines of err's message.
func errLines(err error) []string {
	if err == nil {
		return nil
	}
	return strings.Split(err.Error(), "\n")
}

// want is one expected error: its "line: path" (as in "bad.yaml:<at>: ...")
// and a fragment of its message.
type want struct{ at, msg string }

// checkErrors fails t unless err has exactly the lines wanted, in order,
// each for a file bad.yaml.
func checkErrors(t *testing.T, err error, wanted []want) {
	t.Helper()
	got := errLines(err)
	if len(got) != len(wanted) {
		t.Fatalf("got %d errors, want %d:\n%v", len(got), len(wanted), err)
	}
	for i, w := range wanted {
		prefix := "bad.yaml:" + w.at + ": "
		if !strings.HasPrefix(got[i], prefix) || !strings.Contains(got[i][len(prefix):], w.msg) {
			t.Errorf("error %d:\n got %s\nwant %s...%s", i, got[i], prefix, w.msg)
		}
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		want []want
	}{
		// Empty files and missing jobs.
		{"empty file", "", []want{{"1: jobs", "at least one job is required"}}},
		{"only comments", "# nothing\n\n# here\n", []want{{"1: jobs", "at least one job is required"}}},
		{"empty jobs list", "log:\n  level: info\njobs: []\n", []want{{"3: jobs", "at least one job is required"}}},
		{"null jobs", "log: {level: info}\njobs:\n", []want{{"2: jobs", "at least one job is required"}}},

		// YAML syntax and unsupported YAML features.
		{"syntax error", "jobs:\n  - name: a\n    schedule: \"@every 10s\n", []want{{"3", "invalid YAML: could not find end character of double-quoted text"}}},
		{"top level list", "- name: a\n", []want{{"1", "the file must be a mapping"}}},
		{"two documents", job0 + "---\n" + job0, []want{{"6", "more than one YAML document"}}},
		{"directive then two documents", "%YAML 1.2\n---\n" + job0 + "---\nlog: {}\n", []want{{"8", "more than one YAML document"}}},
		{"anchor", "log: &l {level: info}\n" + job0, []want{{"1: log", "anchors (&name) are not supported"}}},
		{"alias", "jobs:\n  - name: a\n    schedule: &s \"@every 10s\"\n    shell: *s\n", []want{
			{"3: jobs[0].schedule", "anchors"}, {"4: jobs[0].shell", "aliases (*name) are not supported"}}},
		// The job's checks stay quiet: the merge might have set shell.
		{"merge key", "jobs:\n  - name: a\n    <<: {shell: x}\n    schedule: \"@every 10s\"\n", []want{{"3: jobs[0]", "merge keys (<<) are not supported"}}},
		{"tag", "jobs:\n  - name: !!str a\n    schedule: \"@every 10s\"\n    shell: x\n", []want{{"2: jobs[0].name", "tags (!tag) are not supported"}}},
		{"non-string key", "1: x\n" + job0, []want{{"1", "keys must be strings, got an integer"}}},

		// Unknown and duplicate keys.
		{"unknown top-level key", "nats: {}\njob:\n  - name: a\n", []want{
			{"1: jobs", "at least one job is required"}, {"2: job", "unknown key (valid keys here: nats, lock, history, http, log, shutdown_grace, max_concurrent_runs, config_watch, notify, jobs, deployment, replicas, replica, runtime_jobs, kinds, groups)"}}},
		{"unknown nested key", "lock:\n  lease: 20s\n  leese: 10s\n" + job0, []want{{"3: lock.leese", "unknown key (valid keys here: bucket, lease, renew,"}}},
		{"unknown job key", "jobs:\n  - name: a\n    schedule: \"@every 10s\"\n    shell: x\n    timout: 1m\n", []want{{"5: jobs[0].timout", "unknown key"}}},
		{"odd unknown key quoted in path", "nats:\n  \"tls file\": x\n" + job0, []want{{`2: nats["tls file"]`, "unknown key"}}},
		{"duplicate key", "lock:\n  lease: 20s\n  renew: 5s\n  lease: 30s\n" + job0, []want{{"4: lock.lease", "duplicate key (first at line 2)"}}},
		{"duplicate env key", "jobs:\n  - name: a\n    schedule: \"@every 10s\"\n    shell: x\n    env: {A: x, A: y}\n", []want{{"5: jobs[0].env.A", "duplicate key (first at line 5)"}}},

		// Wrong YAML types.
		{"section not a mapping", "lock: 5\n" + job0, []want{{"1: lock", "expected a mapping, got an integer"}}},
		{"jobs not a list", "jobs: {name: a}\n", []want{{"1: jobs", "expected a list of jobs, got a mapping"}}},
		{"null job entry", "jobs:\n  -\n  - name: b\n    schedule: \"@every 10s\"\n    shell: x\n", []want{{"2: jobs[0]", "empty job"}}},
		{"job not a mapping", "jobs:\n  - hello\n", []want{{"2: jobs[0]", "expected a mapping, got a string"}}},
		{"string field given integer", "jobs:\n  - name: 123\n    schedule: \"@every 10s\"\n    shell: x\n", []want{{"2: jobs[0].name", "expected a string, got an integer; quote the value"}}},
		{"string field given boolean", "log:\n  format: true\n" + job0, []want{{"2: log.format", "expected a string, got a boolean"}}},
		{"command element not a string", "jobs:\n  - name: a\n    schedule: \"@every 10s\"\n    command:\n      - chmod\n      - 0755\n      - f\n", []want{{"6: jobs[0].command[1]", "expected a string, got an integer"}}},
		{"command not a list", "jobs:\n  - name: a\n    schedule: \"@every 10s\"\n    command: echo hi\n", []want{{"4: jobs[0].command", "expected a list of strings, got a string"}}},
		{"env not a mapping", "jobs:\n  - name: a\n    schedule: \"@every 10s\"\n    shell: x\n    env: [A=1]\n", []want{{"5: jobs[0].env", "expected a mapping of strings, got a list"}}},
		{"env value not a string", "jobs:\n  - name: a\n    schedule: \"@every 10s\"\n    shell: x\n    env:\n      PORT: 8080\n", []want{{"6: jobs[0].env.PORT", "expected a string, got an integer"}}},
		{"int given quoted string", "jobs:\n  - name: a\n    schedule: \"@every 10s\"\n    shell: x\n    retries: \"2\"\n", []want{{"5: jobs[0].retries", "expected an integer, got a string"}}},
		{"int given float", "history:\n  size: 2.5\n" + job0, []want{{"2: history.size", "expected an integer, got a number"}}},
		{"bool given yes", "config_watch: no\n" + job0, []want{{"1: config_watch", `expected true or false, got "no" (a string in YAML 1.2)`}}},
		{"bool given quoted string", "config_watch: \"false\"\n" + job0, []want{{"1: config_watch", "expected true or false, got a string"}}},
		{"bool given integer", "config_watch: 0\n" + job0, []want{{"1: config_watch", "expected true or false, got an integer"}}},
		{"int overflow", "lock:\n  replicas: 99999999999999999999\n" + job0, []want{{"2: lock.replicas", "integer out of range"}}},

		// Durations.
		{"bare integer duration", "lock:\n  lease: 20\n" + job0, []want{{"2: lock.lease", `a bare number is not a duration: add a unit, such as "20s"`}}},
		{"bad duration string", "shutdown_grace: 10 minutes\n" + job0, []want{{"1: shutdown_grace", `invalid duration "10 minutes"`}}},
		{"duration given list", "lock:\n  renew: [1s]\n" + job0, []want{{"2: lock.renew", "expected a duration string"}}},
		{"negative duration", "jobs:\n  - name: a\n    schedule: \"@every 10s\"\n    shell: x\n    grace: -1s\n", []want{{"5: jobs[0].grace", "must not be negative, got -1s"}}},
		{"negative timeout", "jobs:\n  - name: a\n    schedule: \"@every 10s\"\n    shell: x\n    timeout: -5m\n", []want{{"5: jobs[0].timeout", "must not be negative"}}},

		// Jobs: names, schedules, time zones, command/shell.
		{"invalid job name", "jobs:\n  - name: \"bad name\"\n    schedule: \"@every 10s\"\n    shell: x\n", []want{{"2: jobs[0].name", `job name "bad name"`}}},
		{"missing job name", "jobs:\n  - schedule: \"@every 10s\"\n    shell: x\n", []want{{"2: jobs[0].name", "is required"}}},
		{"duplicate job names", job0 + "  - name: b\n    schedule: \"@every 10s\"\n    shell: x\n  - name: a\n    schedule: \"@every 10s\"\n    shell: x\n", []want{
			{"8: jobs[2].name", `duplicate job name "a" (first used by jobs[0] at line 2)`}}},
		{"bad cron spec", "jobs:\n  - name: a\n    shell: x\n  - name: b\n    schedule: \"0 61 * * * *\"\n    shell: x\n    schedule: \"* * * * *\"\n", []want{
			{"2: jobs[0].schedule", "is required"}, {"5: jobs[1].schedule", `schedule "0 61 * * * *"`}, {"7: jobs[1].schedule", "duplicate key"}}},
		{"schedule that never fires", "jobs:\n  - name: a\n    schedule: \"0 0 30 2 *\"\n    shell: x\n", []want{{"3: jobs[0].schedule", `job "a": schedule "0 0 30 2 *" never fires`}}},
		{"empty schedule", "jobs:\n  - name: a\n    schedule: \" \"\n    shell: x\n", []want{{"3: jobs[0].schedule", "must not be empty"}}},
		{"bad time zone", "jobs:\n  - name: a\n    schedule: \"0 0 6 * * *\"\n    timezone: Europe/Berln\n    shell: x\n", []want{{"4: jobs[0].timezone", `unknown time zone "Europe/Berln"`}}},
		{"bad CRON_TZ in spec", "jobs:\n  - name: a\n    schedule: \"CRON_TZ=Nowhere/X 0 0 6 * * *\"\n    shell: x\n", []want{{"3: jobs[0].schedule", "Nowhere/X"}}},
		{"neither command nor shell", "jobs:\n  - name: a\n    schedule: \"@every 10s\"\n", []want{{"2: jobs[0]", "one of command or shell is required"}}},
		{"both command and shell", "jobs:\n  - name: a\n    schedule: \"@every 10s\"\n    command: [\"true\"]\n    shell: \"true\"\n", []want{{"5: jobs[0].shell", "mutually exclusive"}}},
		{"empty command", "jobs:\n  - name: a\n    schedule: \"@every 10s\"\n    command: []\n", []want{{"4: jobs[0].command", "must not be an empty list"}}},
		{"empty program", "jobs:\n  - name: a\n    schedule: \"@every 10s\"\n    command:\n      - \"\"\n      - x\n", []want{{"5: jobs[0].command[0]", "the program must not be empty"}}},
		{"empty shell", "jobs:\n  - name: a\n    schedule: \"@every 10s\"\n    shell: \"\"\n", []want{{"4: jobs[0].shell", "must not be empty"}}},
		{"negative retries", "jobs:\n  - name: a\n    schedule: \"@every 10s\"\n    shell: x\n    retries: -1\n", []want{{"5: jobs[0].retries", "must not be negative, got -1"}}},
		{"unknown on_interrupt", "jobs:\n  - name: a\n    schedule: \"@every 10s\"\n    shell: x\n    on_interrupt: retry\n", []want{{"5: jobs[0].on_interrupt", `unknown policy "retry"; use skip or rerun`}}},
		{"negative jitter", "jobs:\n  - name: a\n    schedule: \"@every 10s\"\n    shell: x\n    jitter: -1s\n", []want{{"5: jobs[0].jitter", "must not be negative"}}},
		{"output_tail too big", "history:\n  output_tail: 300000\n" + job0, []want{{"2: history.output_tail", "must be between 0 (keep no output) and 262144 bytes, got 300000"}}},
		{"negative max_concurrent_runs", "max_concurrent_runs: -1\n" + job0, []want{{"1: max_concurrent_runs", "must not be negative"}}},
		{"bad env name", "jobs:\n  - name: a\n    schedule: \"@every 10s\"\n    shell: x\n    env:\n      \"A=B\": x\n", []want{{`6: jobs[0].env["A=B"]`, "invalid environment variable name"}}},

		// Lock contradictions.
		{"renew equals lease", "lock:\n  lease: 10s\n  renew: 10s\n" + job0, []want{{"3: lock.renew", "must be less than lock.lease (renew 10s, lease 10s)"}}},
		{"default renew above lease", "lock:\n  bucket: locks\n  lease: 5s\n" + job0, []want{{"3: lock.renew", "must be less than lock.lease (renew 10s, lease 5s)"}}},
		{"renew zero", "lock:\n  renew: 0s\n" + job0, []want{{"2: lock.renew", "must be greater than 0"}}},
		// The lock package's own rule, which the file's checks do not repeat
		// (lock.Options.Validate): renewals must come before the safe deadline.
		{"renew within the lease's safety margin", "lock:\n  lease: 10s\n  renew: 9500ms\n" + job0, []want{{"3: lock.renew",
			"Options.RenewInterval 9.5s: must be shorter than LeaseDuration minus its safety margin (9s)"}}},
		{"retry_base above retry_max", "lock:\n  retry_base: 1s\n  retry_max: 500ms\n" + job0, []want{{"2: lock.retry_base", "must not exceed lock.retry_max (retry_base 1s, retry_max 500ms)"}}},
		{"lease fractional", "lock:\n  lease: 1500ms\n  renew: 1s\n" + job0, []want{{"2: lock.lease", "must be a whole number of seconds"}}},
		{"lease below 1s", "lock:\n  lease: 500ms\n  renew: 100ms\n" + job0, []want{{"2: lock.lease", "must be at least 1s, got 500ms"}}},
		{"replicas zero", "lock:\n  replicas: 0\n" + job0, []want{{"2: lock.replicas", "must be between 1 and 5, got 0"}}},
		{"replicas six", "lock:\n  replicas: 6\n" + job0, []want{{"2: lock.replicas", "must be between 1 and 5, got 6"}}},
		{"acquire_timeout zero", "lock:\n  acquire_timeout: 0s\n" + job0, []want{{"2: lock.acquire_timeout", "must be greater than 0"}}},
		{"bad lock bucket", "lock:\n  bucket: my.locks\n" + job0, []want{{"2: lock.bucket", `invalid bucket name "my.locks"`}}},

		// Other sections.
		{"history bucket equals lock bucket", "lock: {bucket: kv}\nhistory:\n  bucket: kv\n" + job0, []want{{"3: history.bucket", "must differ from lock.bucket"}}},
		{"history size zero", "history:\n  size: 0\n" + job0, []want{{"2: history.size", "must be between 1 and 64"}}},
		{"unknown log level", "log:\n  level: verbose\n" + job0, []want{{"2: log.level", `unknown level "verbose"; use debug, info, warn or error`}}},
		{"unknown log format", "log:\n  format: text\n" + job0, []want{{"2: log.format", `unknown format "text"; use json or console`}}},
		{"bad http listen", "http:\n  listen: localhost\n" + job0, []want{{"2: http.listen", `invalid listen address "localhost"`}}},
		{"empty admin token", "http:\n  listen: \":8080\"\n  admin_token: \"\"\n" + job0, []want{{"3: http.admin_token", "must not be empty; leave the key out"}}},
		{"short admin token", "http:\n  listen: \":8080\"\n  admin_token: sekrit\n" + job0, []want{{"3: http.admin_token", "too short: use at least 16 characters"}}},
		{"admin token with a space", "http:\n  listen: \":8080\"\n  admin_token: \"two words in a long token\"\n" + job0, []want{{"3: http.admin_token", "visible ASCII characters without spaces"}}},
		{"admin token without listen", "http:\n  admin_token: 0123456789abcdef0123\n" + job0, []want{{"2: http.admin_token", "has no effect: http.listen is empty"}}},
		{"bad embedded listen port", "nats:\n  embedded:\n    listen: \"127.0.0.1:99999\"\n" + job0, []want{{"3: nats.embedded.listen", "invalid listen address"}}},
		{"empty store_dir", "nats:\n  embedded:\n    store_dir: \"\"\n" + job0, []want{{"3: nats.embedded.store_dir", "must not be empty when nats.url is empty"}}},
		{"two auth methods", "nats:\n  url: nats://x:4222\n  creds_file: a.creds\n  token: t\n" + job0, []want{{"4: nats.token", "conflicts with nats.creds_file"}}},
		{"user without password", "nats:\n  url: nats://x:4222\n  user: me\n" + job0, []want{{"3: nats.password", "is required when nats.user is set"}}},
		{"cert without key", "nats:\n  tls:\n    cert_file: c.pem\n" + job0, []want{{"3: nats.tls.key_file", "is required when nats.tls.cert_file is set"}}},
		{"inbox prefix wildcard", "nats:\n  inbox_prefix: \"_INBOX.>\"\n" + job0, []want{{"2: nats.inbox_prefix", `invalid subject prefix "_INBOX.>"`}}},
		{"inbox prefix trailing dot", "nats:\n  inbox_prefix: _INBOX_me.\n" + job0, []want{{"2: nats.inbox_prefix", "invalid subject prefix"}}},
		{"discovered servers not a bool", "nats:\n  url: nats://x:4222\n  ignore_discovered_servers: \"yes\"\n" + job0, []want{{"3: nats.ignore_discovered_servers", "expected true or false, got a string"}}},
		{"domain with a dot", "nats:\n  url: nats://x:4222\n  jetstream:\n    domain: a.b\n" + job0, []want{{"4: nats.jetstream.domain", `invalid domain "a.b"`}}},
		{"domain and api prefix", "nats:\n  url: nats://x:4222\n  jetstream:\n    domain: hub\n    api_prefix: $JS.hub.API\n" + job0, []want{{"5: nats.jetstream.api_prefix", "conflicts with nats.jetstream.domain"}}},
		{"api prefix wildcard", "nats:\n  url: nats://x:4222\n  jetstream: {api_prefix: \"$JS.*.API\"}\n" + job0, []want{{"3: nats.jetstream.api_prefix", "invalid subject prefix"}}},
		{"domain without url", "nats:\n  jetstream:\n    domain: hub\n" + job0, []want{{"3: nats.jetstream.domain", "requires nats.url"}}},
		{"server name with port", "nats:\n  tls:\n    server_name: \"nats.example.com:4222\"\n" + job0, []want{{"3: nats.tls.server_name", "without scheme or port"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse("bad.yaml", []byte(tt.src))
			if err == nil {
				t.Fatalf("Parse succeeded, want errors %v", tt.want)
			}
			if cfg != nil {
				t.Errorf("Parse returned a Config with an error")
			}
			checkErrors(t, err, tt.want)
			var fe *FieldError
			if !errors.As(err, &fe) || fe.File != "bad.yaml" {
				t.Errorf("errors.As(*FieldError) = %v", fe)
			}
		})
	}
}

func TestParseReportsEveryProblemSortedByLine(t *testing.T) {
	t.Parallel()
	src := `jobs:
  - name: bad name
    schedule: "@every 10s"
    shell: x
  - name: b
    schedule: "@every 1x"
    command: []
lock:
  lease: 20
  renew: 30s
log:
  level: loud
`
	_, err := Parse("cronlock.yaml", []byte(src))
	want := []string{
		`cronlock.yaml:2: jobs[0].name: job name "bad name"`,
		`cronlock.yaml:6: jobs[1].schedule: schedule "@every 1x"`,
		`cronlock.yaml:7: jobs[1].command: must not be an empty list`,
		`cronlock.yaml:9: lock.lease: a bare number is not a duration`,
		// renew vs lease is not reported: lease already has an error.
		`cronlock.yaml:12: log.level: unknown level "loud"`,
	}
	got := errLines(err)
	if len(got) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%v", len(got), len(want), err)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("error %d = %s\nwant prefix %s", i, got[i], want[i])
		}
	}
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := Parse("min.yaml", []byte(job0))
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		// The default store_dir, relative to the file's folder.
		NATS: NATS{Name: "cronlock", Embedded: Embedded{StoreDir: filepath.Join(configDir("min.yaml"), ".cronlock/nats")}},
		Lock: Lock{
			Bucket: "locks", Lease: Duration(20 * time.Second), Renew: Duration(10 * time.Second),
			RetryBase: Duration(50 * time.Millisecond), RetryMax: Duration(500 * time.Millisecond),
			AcquireTimeout: Duration(500 * time.Millisecond), Replicas: 1,
		},
		History:       History{Bucket: "cronlock_history", Size: 20, OutputTail: 4096},
		Replicas:      Replicas{Bucket: "cronlock_replicas"},
		RuntimeJobs:   RuntimeJobs{Bucket: "cronlock_jobs", MaxJobs: DefaultMaxRuntimeJobs},
		HTTP:          HTTP{Listen: "127.0.0.1:8736", HTTPTransport: defaultHTTPTransport()},
		Log:           Log{Level: "info", Format: "json", OutputLinesPerSecond: 100, OutputBytesPerSecond: 65536},
		ShutdownGrace: Duration(30 * time.Second),
		ConfigWatch:   true,
		Jobs: []Job{{
			Name: "a", Schedule: "@every 10s", Shell: "true",
			Grace: Duration(10 * time.Second), Location: time.UTC, Line: 2,
		}},
		Path: "min.yaml",
	}
	cfg.Digest = [sha256.Size]byte{} // of the bytes: not what this test checks
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", cfg, want)
	}

	// Null values are the same as absent keys.
	cfg2, err := Parse("min.yaml", []byte("nats:\nlock:\n  lease:\nhistory: {size: }\nhttp:\n"+job0))
	if err != nil {
		t.Fatal(err)
	}
	for i := range cfg2.Jobs {
		cfg2.Jobs[i].Line -= 5
	}
	cfg2.Digest = [sha256.Size]byte{}
	if !reflect.DeepEqual(cfg2, want) {
		t.Errorf("null values:\n got %+v\nwant %+v", cfg2, want)
	}
}

// TestNATSRoutingKeys decodes the keys that route the client: inbox prefix,
// discovered servers, JetStream domain or API prefix, TLS server name.
func TestNATSRoutingKeys(t *testing.T) {
	t.Parallel()
	cfg, err := Parse("r.yaml", []byte(`nats:
  url: nats://10.0.0.1:4222
  inbox_prefix: _INBOX_cronlock
  ignore_discovered_servers: true
  jetstream: {domain: hub}
  tls: {server_name: nats.example.com}
`+job0))
	if err != nil {
		t.Fatal(err)
	}
	n := cfg.NATS
	if n.InboxPrefix != "_INBOX_cronlock" || !n.IgnoreDiscoveredServers || n.JetStream.Domain != "hub" ||
		n.TLS.ServerName != "nats.example.com" {
		t.Errorf("nats = %+v", n)
	}
	cfg, err = Parse("r.yaml", []byte("nats:\n  url: nats://x:4222\n  ignore_discovered_servers: false\n  jetstream: {api_prefix: $JS.hub.API}\n"+job0))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.NATS.IgnoreDiscoveredServers || cfg.NATS.JetStream.APIPrefix != "$JS.hub.API" {
		t.Errorf("nats = %+v", cfg.NATS)
	}
}

func TestYAMLDirectiveAndDocumentMarkers(t *testing.T) {
	t.Parallel()
	for _, src := range []string{"%YAML 1.2\n---\n" + job0, "---\n" + job0 + "...\n", job0 + "---\n"} {
		if _, err := Parse("d.yaml", []byte(src)); err != nil {
			t.Errorf("%q: %v", src, err)
		}
	}
}

func TestHTTPListenDefault(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ src, want string }{
		{"", DefaultHTTPListen},
		{"http:\n", DefaultHTTPListen}, // null: as if absent
		{"http: {}\n", ""},
		{"http:\n  listen: \"\"\n", ""},
		{"http:\n  listen: \":8080\"\n", ":8080"},
	} {
		cfg, err := Parse("h.yaml", []byte(tt.src+job0))
		if err != nil {
			t.Fatalf("%q: %v", tt.src, err)
		}
		if cfg.HTTP.Listen != tt.want {
			t.Errorf("%q: listen = %q, want %q", tt.src, cfg.HTTP.Listen, tt.want)
		}
	}
}

func TestConfigWatch(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		src  string
		want bool
	}{
		{"", true},
		{"config_watch:\n", true}, // null: as if absent
		{"config_watch: true\n", true},
		{"config_watch: false\n", false},
		{"config_watch: False\n", false},
	} {
		cfg, err := Parse("w.yaml", []byte(tt.src+job0))
		if err != nil {
			t.Fatalf("%q: %v", tt.src, err)
		}
		if cfg.ConfigWatch != tt.want {
			t.Errorf("%q: config_watch = %v, want %v", tt.src, cfg.ConfigWatch, tt.want)
		}
	}
}

func TestJobFields(t *testing.T) {
	t.Parallel()
	src := `jobs:
  - name: a
    schedule: "0 0 6 * * *"
    timezone: Europe/Berlin
    command: ["/bin/echo", "0755", "--x"]
    env: {A: "1", B: ""}
    dir: /tmp
    timeout: 1m30s
    retries: 3
    retry_backoff: 2s
    starting_deadline: 5m
    grace: 0s
  -
    name: b
    schedule: "CRON_TZ=UTC @daily"
    timezone: Local
    shell: |
      echo one
      echo two
`
	cfg, err := Parse("j.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	want := []Job{{
		Name: "a", Schedule: "0 0 6 * * *", Timezone: "Europe/Berlin",
		Command: []string{"/bin/echo", "0755", "--x"}, Env: map[string]string{"A": "1", "B": ""}, Dir: "/tmp",
		Timeout: Duration(90 * time.Second), Retries: 3, RetryBackoff: Duration(2 * time.Second),
		StartingDeadline: Duration(5 * time.Minute), Grace: 0, Location: berlin, Line: 2,
	}, {
		Name: "b", Schedule: "CRON_TZ=UTC @daily", Timezone: "Local", Shell: "echo one\necho two\n",
		Grace: Duration(10 * time.Second), Location: time.Local, Line: 13,
	}}
	if !reflect.DeepEqual(cfg.Jobs, want) {
		t.Errorf("jobs:\n got %+v\nwant %+v", cfg.Jobs, want)
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "cronlock.yaml")
	if err := os.WriteFile(path, []byte("jobs: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil || !strings.HasPrefix(err.Error(), path+":1: jobs: ") {
		t.Errorf("Load error = %v, want it to start with %s:1: jobs:", err, path)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want os.ErrNotExist", err)
	}
}

func TestDuration(t *testing.T) {
	t.Parallel()
	d := Duration(90 * time.Second)
	if d.Duration() != 90*time.Second || d.String() != "1m30s" {
		t.Errorf("Duration() = %v, String() = %q", d.Duration(), d.String())
	}
	if b, _ := d.MarshalText(); string(b) != "1m30s" {
		t.Errorf("MarshalText = %q", b)
	}
}

func TestFieldErrorFormat(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		e    FieldError
		want string
	}{
		{FieldError{File: "c.yaml", Line: 3, Path: "lock.renew", Msg: "bad"}, "c.yaml:3: lock.renew: bad"},
		{FieldError{File: "c.yaml", Line: 3, Path: "", Msg: "invalid YAML: x"}, "c.yaml:3: invalid YAML: x"},
		{FieldError{File: "c.yaml", Line: 0, Path: "", Msg: "2 more"}, "c.yaml: 2 more"},
	} {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestErrorCap(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("jobs:\n")
	for range maxErrors + 10 {
		b.WriteString("  - name: \"bad name\"\n    schedule: \"@every 1s\"\n    shell: x\n")
	}
	_, err := Parse("c.yaml", []byte(b.String()))
	lines := errLines(err)
	if len(lines) != maxErrors+1 || lines[maxErrors] != "c.yaml: 10 more problems not shown" {
		t.Errorf("got %d lines, last %q", len(lines), lines[len(lines)-1])
	}
}
