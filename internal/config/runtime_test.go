package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/cronlock/cronlock/internal/config"
)

const runtimeBase = `
nats: {url: "nats://127.0.0.1:4222"}
http: {listen: ""}
runtime_jobs: {enabled: true}
kinds:
  - name: report
    command: ["/usr/local/bin/report", "--tenant-from-payload"]
    timeout: 5m
  - name: cleanup
    shell: "rm -rf /tmp/x"
    env: {MODE: safe}
`

func loadRuntime(t *testing.T, extra string) *config.Config {
	t.Helper()
	cfg, err := config.Parse("cronlock.yaml", []byte(runtimeBase+extra))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return cfg
}

// A configuration with runtime jobs enabled needs no job of its own; kinds
// are validated; a runtime definition names a kind and gets its command.
func TestRuntimeDefinitions(t *testing.T) {
	t.Parallel()
	cfg := loadRuntime(t, "")
	if cfg.RuntimeJobs.Bucket != "cronlock_jobs" || cfg.RuntimeJobs.MaxJobs != config.DefaultMaxRuntimeJobs {
		t.Errorf("runtime_jobs = %+v, want the default bucket and max_jobs", cfg.RuntimeJobs)
	}
	jobs, err := cfg.ParseDefinitions("-", []byte(`{"name": "acme.report", "schedule": "0 9 * * MON", "timezone": "Europe/Berlin",
  "kind": "report", "payload": {"tenant": "acme", "n": 3}}`))
	if err != nil {
		t.Fatalf("ParseDefinitions: %v", err)
	}
	j := jobs[0].Job
	if got := string(jobs[0].JSON); got != `{"kind":"report","name":"acme.report","payload":{"n":3,"tenant":"acme"},"schedule":"0 9 * * MON","timezone":"Europe/Berlin"}` {
		t.Errorf("stored JSON = %s", got)
	}
	if j.Name != "acme.report" || strings.Join(j.Command, " ") != "/usr/local/bin/report --tenant-from-payload" ||
		j.Timeout.Duration().Minutes() != 5 || string(j.Payload) != `{"n":3,"tenant":"acme"}` || j.Location.String() != "Europe/Berlin" {
		t.Errorf("definition = %+v", j)
	}
	list, err := cfg.ParseDefinitions("defs.yaml", []byte("jobs:\n  - name: a\n    schedule: '@daily'\n    kind: cleanup\n    payload: {x: 1}\n  - name: b\n    schedule: '@hourly'\n    kind: report\n"))
	if err != nil || len(list) != 2 || list[0].Job.Shell != "rm -rf /tmp/x" || list[0].Job.Env["MODE"] != "safe" ||
		string(list[1].JSON) != `{"kind":"report","name":"b","schedule":"@hourly"}` {
		t.Fatalf("list = %+v, %v", list, err)
	}
}

// Bad definitions: the error names the field (and the line), and what a
// definition may not carry without allow_commands is refused.
func TestRuntimeDefinitionErrors(t *testing.T) {
	t.Parallel()
	cfg := loadRuntime(t, "")
	for _, c := range []struct{ name, def, want string }{
		{"bad schedule", `{"name": "x", "schedule": "61 * * * *", "kind": "report"}`, "-:1: schedule: "},
		{"unknown kind", `{"name": "x", "schedule": "@daily", "kind": "nope"}`, `-:1: kind: unknown kind "nope"; the configuration file defines the kinds report, cleanup`},
		{"no kind", `{"name": "x", "schedule": "@daily"}`, "-:1: kind: is required: runtime_jobs.allow_commands is false"},
		{"own command", `{"name": "x", "schedule": "@daily", "shell": "id"}`, "-:1: shell: not allowed: runtime_jobs.allow_commands is false"},
		{"own env", "name: x\nschedule: '@daily'\nkind: report\nenv: {LD_PRELOAD: /tmp/x.so}\n", "-:4: env: not allowed"},
		{"payload not an object", `{"name": "x", "schedule": "@daily", "kind": "report", "payload": [1]}`, "-:1: payload: "},
		{"payload too large", `{"name": "x", "schedule": "@daily", "kind": "report", "payload": {"a": "` + strings.Repeat("x", 70000) + `"}}`, "-:1: payload: is 70008 bytes of JSON"},
		{"unknown key", "name: x\nschedule: '@daily'\nkind: report\nbogus: 1\n", "-:4: bogus: unknown key"},
		{"list item", "jobs:\n  - name: x\n    schedule: '@daily'\n    kind: report\n  - name: x\n    schedule: nope\n    kind: report\n", "-:6: jobs[1].schedule: "},
	} {
		_, err := cfg.ParseDefinitions("-", []byte(c.def))
		var fe *config.FieldError
		if err == nil || !errors.As(err, &fe) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to contain %q", c.name, err, c.want)
		}
	}
	allow := loadRuntime(t, "")
	allow.RuntimeJobs.AllowCommands = true
	if _, err := allow.ParseDefinitions("-", []byte(`{"name": "x", "schedule": "@daily", "shell": "id"}`)); err != nil {
		t.Errorf("with allow_commands: %v", err)
	}
}

// A file job may name a kind too; kind with a command is an error; an
// unknown kind names the line.
func TestFileJobKinds(t *testing.T) {
	t.Parallel()
	cfg := loadRuntime(t, "jobs:\n  - name: weekly\n    schedule: '@weekly'\n    kind: cleanup\n")
	if cfg.Jobs[0].Shell != "rm -rf /tmp/x" {
		t.Errorf("file job of a kind runs %q", cfg.Jobs[0].Shell)
	}
	_, err := config.Parse("c.yaml", []byte(runtimeBase+"jobs:\n  - name: w\n    schedule: '@weekly'\n    kind: cleanup\n    shell: id\n  - name: v\n    schedule: '@weekly'\n    kind: gone\n"))
	for _, want := range []string{"c.yaml:16: jobs[0].shell: kind and shell are mutually exclusive", `c.yaml:19: jobs[1].kind: unknown kind "gone"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want %q", err, want)
		}
	}
}

// A runtime one-off deletes its definition after its run unless it says
// keep; a file job may only keep.
func TestRuntimeOneOffAfterRun(t *testing.T) {
	t.Parallel()
	cfg := loadRuntime(t, "")
	for def, want := range map[string]string{
		`{"name": "x", "at": "2030-12-24T18:00:00+01:00", "kind": "report"}`:                      config.AfterRunDelete,
		`{"name": "x", "at": "2030-12-24T18:00:00+01:00", "kind": "report", "after_run": "keep"}`: config.AfterRunKeep,
	} {
		j, err := cfg.DecodeDefinition("-", []byte(def))
		if err != nil || j.AfterRun != want {
			t.Errorf("%s: after_run %q, %v; want %q", def, j.AfterRun, err, want)
		}
	}
	if _, err := cfg.DecodeDefinition("-", []byte(`{"name": "x", "at": "2030-12-24T18:00:00+01:00", "kind": "report", "after_run": "drop"}`)); err == nil ||
		!strings.Contains(err.Error(), "after_run: unknown value \"drop\"; use keep or delete") {
		t.Errorf("bad after_run: %v", err)
	}
}
