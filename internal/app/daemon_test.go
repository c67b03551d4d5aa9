package app_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/cronlock/cronlock/internal/testlog"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cronlock/cronlock/internal/app"
	"github.com/cronlock/cronlock/internal/config"
	"github.com/cronlock/cronlock/internal/natstest"
)

// get fetches an HTTP URL and returns the status code and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestHTTP checks /healthz, /metrics and that /readyz follows the NATS
// connection: it fails while the server is unreachable (a frozen proxy
// whose connections were cut) and recovers after.
func TestHTTP(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t, natstest.Options{})
	proxy := natstest.NewProxy(t, srv.Addr().String())
	dir := t.TempDir()
	cfg := writeConfig(t, dir, fmt.Sprintf(`
nats: {url: %s}
lock: {lease: 2s, renew: 500ms}
http: {listen: "127.0.0.1:0"}
jobs:
  - name: http.job
    schedule: "* * * * * *"
    shell: "true"
`, proxy.URL()))
	logs := &testlog.Buffer{}
	d, _ := startDaemon(t, cfg, logs)
	base := "http://" + d.HTTPAddr().String()

	if code, body := get(t, base+"/healthz"); code != 200 {
		t.Errorf("/healthz = %d %q", code, body)
	}
	waitFor(t, 10*time.Second, "/readyz 200", func() bool { code, _ := get(t, base+"/readyz"); return code == 200 })
	var metrics string
	waitFor(t, 10*time.Second, "a finished run in /metrics", func() bool {
		_, metrics = get(t, base+"/metrics")
		return regexp.MustCompile(`(?m)^cronlock_runs_total\{job="http.job",status="succeeded"\} [1-9]`).MatchString(metrics)
	})
	for _, m := range []string{"cronlock_nats_connected 1", "cronlock_config_reloads_total", "cronlock_build_info", "go_goroutines", "process_cpu_seconds_total"} {
		if !strings.Contains(metrics, m) {
			t.Errorf("/metrics lacks %s", m)
		}
	}

	proxy.Freeze()
	proxy.Cut()
	waitFor(t, 10*time.Second, "/readyz 503 while NATS is unreachable", func() bool {
		code, body := get(t, base+"/readyz")
		return code == 503 && strings.Contains(body, "NATS")
	})
	if code, _ := get(t, base+"/healthz"); code != 200 {
		t.Errorf("/healthz = %d while NATS is unreachable, want 200", code)
	}
	if d.Ready() {
		t.Errorf("Ready() = true while disconnected")
	}
	proxy.Thaw()
	waitFor(t, 20*time.Second, "/readyz 200 after reconnecting", func() bool { code, _ := get(t, base+"/readyz"); return code == 200 })
	// The client reports the reconnect to its handler asynchronously: the
	// connection can be up, and /readyz 200, a moment before it is logged.
	waitFor(t, 10*time.Second, "the disconnect and the reconnect logged", func() bool {
		s := logs.String()
		return strings.Contains(s, "disconnected from NATS") && strings.Contains(s, "reconnected to NATS")
	})
}

// TestReload applies a reload in-process: a changed job runs its new
// command, a removed one stops, and a change to another section is only
// logged.
func TestReload(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	dir := t.TempDir()
	a, b, c := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "c")
	yaml := func(jobs string, renew string) string {
		return fmt.Sprintf(`
nats: {url: %s}
lock: {lease: 2s, renew: %s}
http: {listen: ""}
jobs:
%s`, url, renew, jobs)
	}
	job := func(name, file, word string) string {
		return fmt.Sprintf("  - name: %s\n    schedule: \"* * * * * *\"\n    shell: echo %s >> %s\n", name, word, yamlQuote(file))
	}
	cfg := writeConfig(t, dir, yaml(job("keep", a, "old")+job("gone", b, "x"), "500ms"))
	logs := &testlog.Buffer{}
	d, _ := startDaemon(t, cfg, logs)
	waitFor(t, 10*time.Second, "both jobs run", func() bool { return len(lines(t, a)) > 0 && len(lines(t, b)) > 0 })

	writeConfig(t, dir, yaml(job("keep", a, "new")+job("added", c, "y"), "600ms"))
	if err := d.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	waitFor(t, 10*time.Second, "the changed and the added job run", func() bool {
		l := lines(t, a)
		return len(l) > 0 && l[len(l)-1] == "new" && len(lines(t, c)) > 0
	})
	gone := len(lines(t, b))
	waitFor(t, 10*time.Second, "two more runs of the added job", func() bool { return len(lines(t, c)) >= 3 })
	if n := len(lines(t, b)); n != gone {
		t.Errorf("the removed job ran %d more time(s) after the reload", n-gone)
	}
	s := logs.String()
	if !strings.Contains(s, "take effect only after a restart") || !strings.Contains(s, `"sections":["lock"]`) {
		t.Errorf("the lock change was not logged as needing a restart:\n%s", s)
	}
	if !strings.Contains(s, `"added":["added"],"removed":["gone"],"changed":["keep"]`) {
		t.Errorf("reload summary not logged:\n%s", s)
	}

	// An invalid file is rejected and the jobs keep running.
	path := filepath.Join(dir, "cronlock.yaml")
	if err := os.WriteFile(path, []byte("jobs:\n  - name: x\n    schedule: nope\n    shell: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var fe *config.FieldError
	if err := d.Reload(); !errors.As(err, &fe) {
		t.Fatalf("Reload of an invalid file = %v, want a config.FieldError", err)
	}
	n := len(lines(t, c))
	waitFor(t, 10*time.Second, "the job still runs", func() bool { return len(lines(t, c)) > n })
}

// TestDaemonStoreInUse: a second daemon on the same embedded store is
// refused with a message that says what to do.
func TestDaemonStoreInUse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := writeConfig(t, dir, fmt.Sprintf(`
nats:
  embedded: {store_dir: %s}
http: {listen: ""}
jobs: [{name: j, schedule: "@yearly", shell: "true"}]
`, yamlQuote(filepath.Join(dir, "store"))))
	startDaemon(t, cfg, &testlog.Buffer{})
	_, err := app.NewDaemon(context.Background(), cfg, io.Discard)
	if !errors.Is(err, app.ErrStoreInUse) {
		t.Fatalf("second NewDaemon = %v, want ErrStoreInUse", err)
	}
	// The advice leads with sharing the first replica's server, and warns
	// that a store of its own would not coordinate.
	msg := err.Error()
	share, own := strings.Index(msg, "share the first one's server"), strings.Index(msg, "do not coordinate")
	if share < 0 || own < share || !strings.Contains(msg, "nats.embedded.listen") || !strings.Contains(msg, "nats.url") {
		t.Fatalf("second NewDaemon: %q\nwant first the advice to share the first one's server (nats.embedded.listen, "+
			"nats.url), then that separate stores do not coordinate", msg)
	}
}

// TestOperatorDial covers how operator commands reach NATS without a URL:
// not at all before a daemon made the store (ErrNoStore, nothing created),
// through nats.embedded.listen to a running daemon, not at all while a
// daemon holds the store without listening, and by opening the store when
// no daemon runs.
func TestOperatorDial(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	storeDir := filepath.Join(dir, "store")
	store := yamlQuote(storeDir)
	jobs := "http: {listen: \"\"}\njobs: [{name: j, schedule: \"@yearly\", shell: \"true\"}]\n"

	// No store yet: refused, naming where it looked; nothing created.
	alone := writeConfig(t, dir, fmt.Sprintf("nats:\n  embedded: {store_dir: %s}\n%s", store, jobs))
	_, err := app.Dial(ctx, alone, newLogger(t, &testlog.Buffer{}))
	if !errors.Is(err, app.ErrNoStore) || !strings.Contains(err.Error(), storeDir) {
		t.Fatalf("Dial before any daemon = %v, want ErrNoStore naming %s", err, storeDir)
	}
	if _, err := os.Stat(storeDir); err == nil {
		t.Fatalf("Dial without a store created %s", storeDir)
	}

	// A daemon listening: the command connects to it.
	listen := freePort(t)
	shared := writeConfig(t, dir, fmt.Sprintf("nats:\n  embedded: {store_dir: %s, listen: %q}\n%s", store, listen, jobs))
	logs := &testlog.Buffer{}
	_, stop := startDaemon(t, shared, logs)
	cl, err := app.Dial(ctx, shared, newLogger(t, logs))
	if err != nil {
		t.Fatalf("Dial via nats.embedded.listen: %v", err)
	}
	if err := cl.Trigger(ctx, "j"); err != nil {
		t.Errorf("Trigger: %v", err)
	}
	cl.Close()

	// The same store without the listen address: refused, with advice.
	_, err = app.Dial(ctx, alone, newLogger(t, &testlog.Buffer{}))
	if !errors.Is(err, app.ErrStoreInUse) || !strings.Contains(err.Error(), "nats.embedded.listen") {
		t.Fatalf("Dial with the store in use = %v, want ErrStoreInUse suggesting nats.embedded.listen", err)
	}

	// No daemon any more: the command opens the store itself, and releases it.
	stop()
	for range 2 {
		cl, err := app.Dial(ctx, alone, newLogger(t, &testlog.Buffer{}))
		if err != nil {
			t.Fatalf("Dial without a daemon: %v", err)
		}
		if _, err := cl.Locks(ctx); err != nil {
			t.Errorf("Locks: %v", err)
		}
		cl.Close()
	}
}

// freePort returns a loopback address that was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestStartWaitsForJetStream starts the daemon against a 3-node cluster
// that has lost its quorum (JetStream API requests go unanswered, as right
// after node restarts): start-up keeps retrying instead of giving up, with
// /readyz saying so, and completes once the quorum is back.
func TestStartWaitsForJetStream(t *testing.T) {
	t.Parallel()
	c := natstest.RunCluster(t, 3)
	c.Stop(1)
	c.Stop(2)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, fmt.Sprintf(`
nats: {url: %q}
lock: {lease: 2s, renew: 500ms, replicas: 3}
http: {listen: "127.0.0.1:0"}
jobs: [{name: j, schedule: "@yearly", shell: "true"}]
`, c.URL()))
	logs := &testlog.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d, err := app.NewDaemon(ctx, cfg, logs)
	if err != nil {
		t.Fatalf("NewDaemon: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	base := "http://" + d.HTTPAddr().String()
	waitFor(t, 60*time.Second, "a failed attempt logged", func() bool {
		select {
		case err := <-done:
			t.Fatalf("Run returned while NATS had no quorum: %v\nlogs:\n%s", err, logs)
		default:
		}
		return strings.Contains(logs.String(), "NATS JetStream not answering yet; retrying")
	})
	if code, body := get(t, base+"/readyz"); code != 503 || !strings.HasPrefix(body, "not ready: opening buckets") {
		t.Errorf("/readyz while JetStream has no quorum = %d %q, want 503 \"not ready: opening buckets...\"", code, body)
	}
	c.Start(1)
	c.Start(2)
	waitFor(t, 60*time.Second, "ready after the quorum came back", d.Ready)
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}

// TestReloadWhileWaitingForNATS: a reload before NATS is up replaces the
// jobs that start once it is.
func TestReloadWhileWaitingForNATS(t *testing.T) {
	t.Parallel()
	port := reservePort(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	yaml := func(word string) string {
		return fmt.Sprintf(`
nats: {url: "nats://127.0.0.1:%d"}
lock: {lease: 2s, renew: 500ms}
http: {listen: ""}
jobs: [{name: j, schedule: "* * * * * *", shell: "echo %s >> %s"}]
`, port, word, out)
	}
	cfg := writeConfig(t, dir, yaml("old"))
	logs := &testlog.Buffer{}
	d, stop := startDaemon(t, cfg, logs)
	// Stop the daemon before the server that the cleanup stops after it: a
	// run that ends while NATS is gone keeps its replica trying to record
	// it for shutdown_grace (30 s), which is the contract, not a hang.
	defer stop()
	waitFor(t, 20*time.Second, "a failed connection attempt logged", func() bool {
		return strings.Contains(logs.String(), "cannot connect to NATS; retrying")
	})
	writeConfig(t, dir, yaml("new"))
	if err := d.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	natstest.RunServer(t, natstest.Options{Configure: func(o *server.Options) { o.Port = port }})
	waitFor(t, 20*time.Second, "two runs", func() bool { return len(lines(t, out)) >= 2 })
	for _, l := range lines(t, out) {
		if l != "new" {
			t.Fatalf("runs wrote %q, want only the reloaded job's \"new\"", lines(t, out))
		}
	}
}

// TestRunFailsOnABucketThatCannotWork: waiting is for NATS that does not
// answer; a lock bucket with the wrong settings ends Run with the error.
func TestRunFailsOnABucketThatCannotWork(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	_, js := natstest.Connect(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "locks", History: 5, LimitMarkerTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, t.TempDir(), fmt.Sprintf(`
nats: {url: %s}
http: {listen: ""}
jobs: [{name: j, schedule: "@yearly", shell: "true"}]
`, url))
	d, err := app.NewDaemon(ctx, cfg, &testlog.Buffer{})
	if err != nil {
		t.Fatalf("NewDaemon: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "history 5") {
			t.Errorf("Run = %v, want the lock bucket's history named", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run still waiting on a bucket that cannot work")
	}
}
