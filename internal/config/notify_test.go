package config

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// jobs2 is a jobs section with two jobs, "a" inheriting the top-level
// notify list and "b" writing its own list (to be appended).
const jobs2 = `jobs:
  - name: a
    schedule: "@every 10s"
    shell: "true"
  - name: b
    schedule: "@every 10s"
    shell: "true"
`

func TestNotifyErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		want []want
	}{
		{"not a list", "notify: {webhook: http://x}\n" + job0, []want{{"1: notify", "expected a list of notify targets, got a mapping"}}},
		{"null entry", "notify:\n  -\n" + job0, []want{{"2: notify[0]", "empty notify target"}}},
		{"unknown key", "notify:\n  - webhook: http://x\n    url: http://y\n" + job0, []want{
			{"3: notify[0].url", "unknown key (valid keys here: webhook, headers, secret, secret_file, headers_file, command, dir, on)"}}},
		{"neither webhook nor command", "notify:\n  - on: [failure]\n" + job0, []want{{"2: notify[0]", "one of webhook or command is required"}}},
		{"both webhook and command", "notify:\n  - webhook: http://x\n    command: [\"true\"]\n" + job0, []want{
			{"3: notify[0].command", "webhook and command are mutually exclusive"}}},
		{"relative URL", "notify:\n  - webhook: /hook\n" + job0, []want{{"2: notify[0].webhook", `invalid URL: must be absolute, starting with "http://" or "https://"`}}},
		{"ftp URL", "notify:\n  - webhook: ftp://example.com/x\n" + job0, []want{{"2: notify[0].webhook", `invalid URL: scheme "ftp" is not supported; use http or https`}}},
		{"URL without host", "notify:\n  - webhook: \"http:///path\"\n" + job0, []want{{"2: notify[0].webhook", "invalid URL: the host is missing"}}},
		{"URL with port only", "notify:\n  - webhook: \"https://:443/x\"\n" + job0, []want{{"2: notify[0].webhook", "invalid URL: the host is missing"}}},
		{"unparsable URL", "notify:\n  - webhook: \"http://exa mple.com/\"\n" + job0, []want{{"2: notify[0].webhook", "invalid URL: invalid character"}}},
		{"empty URL", "notify:\n  - webhook: \"\"\n" + job0, []want{{"2: notify[0].webhook", "invalid URL: must be absolute"}}},
		{"webhook not a string", "notify:\n  - webhook: 8080\n" + job0, []want{{"2: notify[0].webhook", "expected a string, got an integer"}}},
		{"empty command", "notify:\n  - command: []\n" + job0, []want{{"2: notify[0].command", "must not be an empty list"}}},
		{"empty program", "notify:\n  - command: [\"\", x]\n" + job0, []want{{"2: notify[0].command[0]", "the program must not be empty"}}},
		{"command as string", "notify:\n  - command: notify-send\n" + job0, []want{{"2: notify[0].command", "expected a list of strings, got a string"}}},
		{"headers on command", "notify:\n  - command: [cat]\n    headers: {A: b}\n    secret: s\n" + job0, []want{
			{"3: notify[0].headers", "applies only to webhook targets"}, {"4: notify[0].secret", "applies only to webhook targets"}}},
		{"empty secret", "notify:\n  - webhook: http://x\n    secret: \"\"\n" + job0, []want{{"3: notify[0].secret", "must not be empty; leave the key out"}}},
		{"bad header name", "notify:\n  - webhook: http://x\n    headers:\n      \"X Token\": v\n" + job0, []want{{`4: notify[0].headers["X Token"]`, "invalid header name"}}},
		{"reserved header", "notify:\n  - webhook: http://x\n    headers:\n      x-cronlock-signature: v\n      content-type: text/plain\n" + job0, []want{
			{"4: notify[0].headers.x-cronlock-signature", "X-Cronlock-Signature is set by cronlock"},
			{"5: notify[0].headers.content-type", "Content-Type is set by cronlock"}}},
		{"header value with newline", "notify:\n  - webhook: http://x\n    headers:\n      X-A: \"a\\nb\"\n" + job0, []want{{"4: notify[0].headers.X-A", "must not contain a line break"}}},
		{"header value not a string", "notify:\n  - webhook: http://x\n    headers:\n      X-A: 1\n" + job0, []want{{"4: notify[0].headers.X-A", "expected a string, got an integer"}}},
		{"unknown event", "notify:\n  - webhook: http://x\n    on:\n      - failure\n      - failed\n" + job0, []want{
			{"5: notify[0].on[1]", `unknown event "failed"; use failure, missed, recovered, success, anomaly`}}},
		{"duplicate event", "notify:\n  - webhook: http://x\n    on: [missed, missed]\n" + job0, []want{{"3: notify[0].on[1]", `duplicate event "missed"`}}},
		{"empty on", "notify:\n  - webhook: http://x\n    on: []\n" + job0, []want{{"3: notify[0].on", "must not be an empty list; leave the key out for the default [failure, missed, recovered, anomaly, suspended]"}}},
		{"job target", jobs2 + "    notify:\n      - command: [cat]\n      - webhook: \"mailto:ops@example.com\"\n", []want{
			{"10: jobs[1].notify[1].webhook", `scheme "mailto" is not supported`}}},
		{"job notify not a list", jobs2 + "    notify: none\n", []want{{"8: jobs[1].notify", "expected a list of notify targets, got a string"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("bad.yaml", []byte(tt.src))
			checkErrors(t, err, tt.want)
		})
	}
}

func TestNotifyURLErrorsDoNotRepeatTheURL(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"/hooks/T0/B0/sekrit", "ftp://host/sekrit", "http:///sekrit", "http://h ost/sekrit", "http://host:port/sekrit"} {
		_, err := Parse("bad.yaml", []byte("notify:\n  - webhook: \""+u+"\"\n"+job0))
		if err == nil {
			t.Errorf("%s: no error", u)
			continue
		}
		if strings.Contains(err.Error(), "sekrit") {
			t.Errorf("%s: error repeats the URL: %v", u, err)
		}
	}
}

func TestNotifyTargets(t *testing.T) {
	t.Parallel()
	src := `notify:
  - webhook: https://hooks.example.com/x
    headers:
      Authorization: Bearer abc
    secret: k
  - command: [cat]
    on: [success]
` + jobs2 + `    notify:
      - command: ["/bin/notify", "--urgent"]
        on: [failure, recovered]
  - name: c
    schedule: "@every 10s"
    shell: "true"
    notify: []
  - name: d
    schedule: "@every 10s"
    shell: "true"
    notify:
`
	cfg, err := Parse("n.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	top := []NotifyTarget{{
		Webhook: "https://hooks.example.com/x", Headers: map[string]Secret{"Authorization": "Bearer abc"},
		Secret: "k", On: []string{"failure", "missed", "recovered", "anomaly", "suspended"}, Line: 2,
	}, {Command: []string{"cat"}, On: []string{"success"}, Line: 6}}
	if !reflect.DeepEqual(cfg.Notify, top) {
		t.Errorf("notify:\n got %+v\nwant %+v", cfg.Notify, top)
	}
	own := []NotifyTarget{{Command: []string{"/bin/notify", "--urgent"}, On: []string{"failure", "recovered"}, Line: 16}}
	got := cfg.NotifyTargets()
	wantTargets := map[string][]NotifyTarget{"a": top, "b": own, "c": {}, "d": top}
	if !reflect.DeepEqual(got, wantTargets) {
		t.Errorf("NotifyTargets():\n got %+v\nwant %+v", got, wantTargets)
	}
	if got["c"] == nil || cfg.Jobs[2].Notify == nil {
		t.Errorf("notify: [] decoded as nil (inherit) instead of an empty list")
	}
	if cfg.Jobs[3].Notify != nil {
		t.Errorf("null notify decoded as %v, want nil (inherit)", cfg.Jobs[3].Notify)
	}
}

func TestNotifyWithoutTopLevelList(t *testing.T) {
	t.Parallel()
	cfg, err := Parse("n.yaml", []byte(job0))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.NotifyTargets(); len(got) != 1 || len(got["a"]) != 0 {
		t.Errorf("NotifyTargets() = %v, want a with no targets", got)
	}
}

// TestNotifySecretsRedacted checks that webhook URLs, header values and
// signing keys appear in no rendering of a Config, and not in errors about
// other keys of the same target.
func TestNotifySecretsRedacted(t *testing.T) {
	t.Parallel()
	src := "notify:\n  - webhook: https://hooks.example.com/T0/sekrit1\n    headers:\n      Authorization: sekrit2\n    secret: sekrit3\n" + job0
	cfg, err := Parse("n.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{fmt.Sprintf("%v", cfg), fmt.Sprintf("%+v", *cfg), fmt.Sprintf("%#v", cfg.Notify), string(js)} {
		if strings.Contains(out, "sekrit") {
			t.Errorf("secret printed: %s", out)
		}
	}
	if cfg.Notify[0].Webhook.Value() != "https://hooks.example.com/T0/sekrit1" || cfg.Notify[0].Headers["Authorization"].Value() != "sekrit2" {
		t.Errorf("Value() lost the secrets: %+v", cfg.Notify[0])
	}

	// A YAML syntax error on a header line does not quote it.
	_, err = Parse("n.yaml", []byte("notify:\n  - webhook: http://x\n    headers:\n      Authorization: \"sekrit\\q\"\n"+job0))
	if err == nil || strings.Contains(err.Error(), "sekrit") {
		t.Errorf("syntax error = %v", err)
	}
}
