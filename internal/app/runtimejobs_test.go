package app_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/jobstore"
	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/internal/testlog"
)

// A reload that would delete a kind a runtime job runs, or give a file
// job a runtime job's name, is rejected naming them, and the runtime job
// keeps running; a reload that changes the kind's command changes what
// the runtime job runs.
func TestReloadKeepsRuntimeJobsValid(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	yaml := func(kindShell, extraJob string) string {
		return fmt.Sprintf(`
nats: {url: %s}
lock: {lease: 2s, renew: 500ms}
http: {listen: ""}
runtime_jobs: {enabled: true}
kinds:
%s
jobs:
  - name: file.job
    schedule: "@yearly"
    shell: "true"
%s`, url, kindShell, extraJob)
	}
	kind := func(word string) string {
		return fmt.Sprintf("  - name: k\n    shell: 'echo %s >> %s'\n", word, out)
	}
	cfg := writeConfig(t, dir, yaml(kind("old"), ""))
	logs := &testlog.Buffer{}
	d, _ := startDaemon(t, cfg, logs)
	_, js := natstest.Connect(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store, err := jobstore.Open(ctx, js, "cronlock_jobs", 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Put(ctx, "rt", []byte(`{"name":"rt","schedule":"* * * * * *","kind":"k"}`), 0, "test"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "a run of the runtime job", func() bool { return strings.Contains(readFile(t, out), "old") })

	writeConfig(t, dir, yaml("  - name: other\n    shell: 'true'\n", ""))
	if err := d.Reload(); err == nil || !strings.Contains(err.Error(), `unknown kind "k"`) || !strings.Contains(err.Error(), "runtime job rt") {
		t.Errorf("reload deleting the kind in use = %v, want it rejected naming the runtime job and the kind", err)
	}
	writeConfig(t, dir, yaml(kind("old"), "  - name: rt\n    schedule: '@yearly'\n    shell: 'true'\n"))
	if err := d.Reload(); err == nil || !strings.Contains(err.Error(), `cronlock.yaml:14: jobs[1].name: "rt" is the name of a runtime job`) {
		t.Errorf("reload adding a file job named like the runtime job = %v, want it rejected with the line", err)
	}
	writeConfig(t, dir, yaml(kind("new"), ""))
	if err := d.Reload(); err != nil {
		t.Fatalf("reload changing the kind's command: %v", err)
	}
	waitFor(t, 20*time.Second, "a run with the kind's new command", func() bool { return strings.Contains(readFile(t, out), "new") })

	// A definition whose kind the file lacks waits, refused; the reload
	// that adds the kind schedules it.
	if _, err := store.Put(ctx, "later", []byte(`{"name":"later","schedule":"* * * * * *","kind":"k2"}`), 0, "test"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the definition of an unknown kind refused", func() bool {
		return strings.Contains(logs.String(), `"job":"later"`) && strings.Contains(logs.String(), `unknown kind \"k2\"`)
	})
	writeConfig(t, dir, yaml(kind("new")+fmt.Sprintf("  - name: k2\n    shell: 'echo k2 >> %s'\n", out), ""))
	if err := d.Reload(); err != nil {
		t.Fatalf("reload adding the kind: %v", err)
	}
	waitFor(t, 20*time.Second, "a run of the definition whose kind came", func() bool { return strings.Contains(readFile(t, out), "k2") })
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}
