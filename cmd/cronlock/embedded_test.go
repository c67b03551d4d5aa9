package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEmbeddedFirstRun starts `cronlock run` with config.example.yaml's
// settings (embedded NATS: url empty, the store under the working
// directory, here a temporary one) and a job every second, and measures the
// time from starting the process to the job's first run.
func TestEmbeddedFirstRun(t *testing.T) {
	t.Parallel()
	binary(t) // built before the clock starts
	example, err := os.ReadFile("../../config.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	head, _, ok := strings.Cut(string(example), "\njobs:\n")
	if !ok {
		t.Fatal("config.example.yaml has no jobs: section")
	}
	// The example's HTTP port may be taken on a test machine.
	head = strings.Replace(head, `listen: "127.0.0.1:8736"`, `listen: "127.0.0.1:0"`, 1)
	if !strings.Contains(head, `url: ""`) || !strings.Contains(head, "store_dir: .cronlock/nats") {
		t.Fatal("config.example.yaml no longer uses the embedded server with store_dir .cronlock/nats")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "ran")
	cfg := writeFile(t, dir, "cronlock.yaml", head+fmt.Sprintf(`
jobs:
  - name: first
    schedule: "* * * * * *"
    shell: echo "$CRONLOCK_TICK" >> %q
`, out))

	start := time.Now()
	d := startDaemon(t, dir, cfg)
	d.waitOutput("scheduler running", 30*time.Second)
	ready := time.Since(start)
	waitFor(t, 30*time.Second, "the first run", func() bool { return len(fileLines(t, out)) > 0 })
	first := time.Since(start)
	t.Logf("embedded mode: scheduler running %v after start, first run written %v after start (ticks are whole seconds; race detector: %v)",
		ready.Round(time.Millisecond), first.Round(time.Millisecond), raceEnabled)

	logs := d.out.String()
	if n := strings.Count(logs, "not for production"); n != 1 {
		t.Errorf("the single-node warning was logged %d times, want once:\n%s", n, logs)
	}
	if _, err := os.Stat(filepath.Join(dir, ".cronlock", "nats", "jetstream")); err != nil {
		t.Errorf("no JetStream store under the working directory: %v", err)
	}
	d.stop()
	if d.waitErr != nil {
		t.Errorf("exit after SIGTERM: %v", d.waitErr)
	}
}
