package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
)

// watchEnv is a directory with a NATS server and jobs that append a line to
// a file of their name at every run, once a second.
type watchEnv struct {
	t    *testing.T
	dir  string
	head string // the configuration before the jobs list
}

func newWatchEnv(t *testing.T, settings string) *watchEnv {
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	head := fmt.Sprintf("nats: {url: %s}\nlock: {lease: 2s, renew: 500ms}\n%sjobs:\n", url, settings)
	return &watchEnv{t: t, dir: t.TempDir(), head: head}
}

// config is the configuration running the named jobs.
func (e *watchEnv) config(jobs ...string) string {
	s := e.head
	for _, name := range jobs {
		s += fmt.Sprintf("  - name: %s\n    schedule: \"* * * * * *\"\n    shell: date +%%s%%N >> %q\n", name, filepath.Join(e.dir, name))
	}
	return s
}

func (e *watchEnv) runs(job string) int { return len(fileLines(e.t, filepath.Join(e.dir, job))) }

// keepsRunning waits for two more runs of each job.
func (e *watchEnv) keepsRunning(jobs ...string) {
	e.t.Helper()
	before := map[string]int{}
	for _, j := range jobs {
		before[j] = e.runs(j)
	}
	waitFor(e.t, 20*time.Second, fmt.Sprintf("two more runs of %v", jobs), func() bool {
		for _, j := range jobs {
			if e.runs(j) < before[j]+2 {
				return false
			}
		}
		return true
	})
}

// writeInPlace overwrites the file's content, keeping its inode.
func writeInPlace(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// metrics fetches /metrics from the daemon, at the address it logged.
func (d *daemon) metrics() string {
	d.t.Helper()
	d.waitOutput("HTTP server listening", 20*time.Second)
	m := regexp.MustCompile(`"addr":"([^"]+)"`).FindStringSubmatch(d.out.String())
	if m == nil {
		d.t.Fatalf("no HTTP address in the log:\n%s", d.out)
	}
	resp, err := http.Get("http://" + m[1] + "/metrics")
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		d.t.Fatal(err)
	}
	return string(b)
}

// TestReloadOnFileChange: with config_watch on (the default), `cronlock
// run` applies an edit of its file without a signal; rejects an invalid
// file, logging it and flipping cronlock_config_last_reload_successful to
// 0, while the jobs keep running; and sees a save the way vim does it (the
// file renamed away, a new one written).
func TestReloadOnFileChange(t *testing.T) {
	t.Parallel()
	e := newWatchEnv(t, "http: {listen: \"127.0.0.1:0\"}\n")
	path := filepath.Join(e.dir, "cronlock.yaml")
	writeInPlace(t, path, e.config("kept"))
	d := startDaemon(t, e.dir, path)
	d.waitOutput("watching the configuration file", 20*time.Second)
	e.keepsRunning("kept")
	checkBuildInfo(t, d.metrics())

	writeInPlace(t, path, e.config("kept", "added"))
	d.waitOutput(`"added":["added"],"removed":[],"changed":[]`, 10*time.Second)
	e.keepsRunning("kept", "added")
	if m := d.metrics(); !strings.Contains(m, "\ncronlock_config_last_reload_successful 1\n") {
		t.Errorf("after a good reload, /metrics lacks cronlock_config_last_reload_successful 1:\n%s", m)
	}

	writeInPlace(t, path, e.config("kept", "added")+"  - name: broken\n    schedule: \"0 0 61 * * *\"\n    shell: \"true\"\n")
	d.waitOutput("reload rejected", 10*time.Second)
	if s := d.out.String(); !strings.Contains(s, path+":12: jobs[2].schedule") {
		t.Errorf("the rejection does not name %s:12 and the field:\n%s", path, s)
	}
	if m := d.metrics(); !strings.Contains(m, "\ncronlock_config_last_reload_successful 0\n") {
		t.Errorf("after a rejected reload, /metrics lacks cronlock_config_last_reload_successful 0:\n%s", m)
	}
	e.keepsRunning("kept", "added")

	// vim's save: the file renamed to a backup, a new file written, the
	// backup removed.
	if err := os.Rename(path, path+"~"); err != nil {
		t.Fatal(err)
	}
	writeInPlace(t, path, e.config("added"))
	if err := os.Remove(path + "~"); err != nil {
		t.Fatal(err)
	}
	d.waitOutput(`"added":[],"removed":["kept"],"changed":[]`, 10*time.Second)
	kept := e.runs("kept")
	e.keepsRunning("added")
	if n := e.runs("kept"); n > kept+1 { // one run may have been under way
		t.Errorf("the removed job ran %d more times after the reload", n-kept)
	}
	if m := d.metrics(); !strings.Contains(m, "\ncronlock_config_last_reload_successful 1\n") {
		t.Errorf("after a good reload, /metrics lacks cronlock_config_last_reload_successful 1:\n%s", m)
	}
	if !d.alive() {
		t.Fatal("cronlock run exited")
	}
	d.stop()
	if d.waitErr != nil {
		t.Errorf("cronlock run after SIGTERM: %v", d.waitErr)
	}
}

// checkBuildInfo checks the labels of cronlock_build_info: the Go version,
// and the commit of the work tree the test binary was built from.
func checkBuildInfo(t *testing.T, metrics string) {
	t.Helper()
	m := regexp.MustCompile(`(?m)^cronlock_build_info\{goversion="([^"]*)",revision="([^"]*)",version="([^"]*)"\} 1$`).FindStringSubmatch(metrics)
	if m == nil {
		t.Fatalf("/metrics lacks cronlock_build_info{goversion,revision,version} 1:\n%s", metrics)
	}
	goVersion, revision, version := m[1], m[2], m[3]
	if want, err := exec.Command("go", "env", "GOVERSION").Output(); err == nil && goVersion != strings.TrimSpace(string(want)) {
		t.Errorf("goversion = %q, want %q", goVersion, strings.TrimSpace(string(want)))
	}
	if version == "" {
		t.Error("empty version label")
	}
	if want := builtRevision(t); revision != want {
		t.Errorf("revision = %q, want %q (the binary's build info)", revision, want)
	}
}

// builtRevision is the revision label the test binary should carry: the
// vcs.revision its build info records ("-dirty" added for a modified work
// tree), or "unknown" when it records none (GOFLAGS=-buildvcs=false, no git).
func builtRevision(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "version", "-m", binary(t)).Output()
	if err != nil {
		t.Fatalf("go version -m: %v", err)
	}
	settings := map[string]string{}
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "build" {
			k, v, _ := strings.Cut(f[1], "=")
			settings[k] = v
		}
	}
	rev, ok := settings["vcs.revision"]
	switch {
	case !ok:
		return "unknown"
	case settings["vcs.modified"] == "true":
		return rev + "-dirty"
	}
	return rev
}

// configMap lays out dir the way the kubelet mounts a ConfigMap volume:
// cronlock.yaml -> ..data/cronlock.yaml, ..data -> ..<version>.
type configMap struct {
	t       *testing.T
	dir     string
	version int
}

// update publishes a new version the way the kubelet does: a new
// timestamped directory, a ..data_tmp symlink to it renamed over ..data,
// then the old directory removed.
func (c *configMap) update(content string) {
	c.t.Helper()
	c.version++
	ts := fmt.Sprintf("..2026_11_30_10_00_%02d.%d", c.version, 100+c.version)
	if err := os.Mkdir(filepath.Join(c.dir, ts), 0o755); err != nil {
		c.t.Fatal(err)
	}
	writeInPlace(c.t, filepath.Join(c.dir, ts, "cronlock.yaml"), content)
	old, _ := os.Readlink(filepath.Join(c.dir, "..data"))
	if err := os.Symlink(ts, filepath.Join(c.dir, "..data_tmp")); err != nil {
		c.t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(c.dir, "..data_tmp"), filepath.Join(c.dir, "..data")); err != nil {
		c.t.Fatal(err)
	}
	if old != "" {
		if err := os.RemoveAll(filepath.Join(c.dir, old)); err != nil {
			c.t.Fatal(err)
		}
		return
	}
	if err := os.Symlink(filepath.Join("..data", "cronlock.yaml"), filepath.Join(c.dir, "cronlock.yaml")); err != nil {
		c.t.Fatal(err)
	}
}

// TestReloadOnConfigMapUpdate: a Kubernetes ConfigMap update, which never
// touches cronlock.yaml itself but swaps the ..data symlink, is applied;
// twice, so that the watch survives the removal of the directory the file
// first resolved to.
func TestReloadOnConfigMapUpdate(t *testing.T) {
	t.Parallel()
	e := newWatchEnv(t, "http: {listen: \"\"}\n")
	cm := &configMap{t: t, dir: filepath.Join(e.dir, "config")}
	if err := os.Mkdir(cm.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cm.update(e.config("kept", "removed"))
	path := filepath.Join(cm.dir, "cronlock.yaml")
	d := startDaemon(t, e.dir, path)
	d.waitOutput("watching the configuration file", 20*time.Second)
	e.keepsRunning("kept", "removed")

	cm.update(e.config("kept", "added"))
	d.waitOutput(`"added":["added"],"removed":["removed"],"changed":[]`, 10*time.Second)
	e.keepsRunning("kept", "added")

	cm.update(e.config("kept", "added", "third"))
	d.waitOutput(`"added":["third"],"removed":[],"changed":[]`, 10*time.Second)
	e.keepsRunning("kept", "added", "third")
}

// TestConfigWatchOff: with config_watch: false a change of the file is not
// applied; the SIGHUP afterwards applies it, which shows the change was one
// a watch would have applied.
func TestConfigWatchOff(t *testing.T) {
	t.Parallel()
	e := newWatchEnv(t, "http: {listen: \"\"}\nconfig_watch: false\n")
	path := filepath.Join(e.dir, "cronlock.yaml")
	writeInPlace(t, path, e.config("kept"))
	d := startDaemon(t, e.dir, path)
	e.keepsRunning("kept")

	writeInPlace(t, path, e.config("kept", "added"))
	// Nothing to wait for: the point is that nothing happens. 2 s is ten
	// times the watch's debounce.
	time.Sleep(2 * time.Second)
	if n := e.runs("added"); n != 0 || strings.Contains(d.out.String(), "configuration reloaded") {
		t.Fatalf("config_watch: false, yet the change was applied (%d runs of the added job):\n%s", n, d.out)
	}
	if strings.Contains(d.out.String(), "watching the configuration file") {
		t.Error("config_watch: false, yet the log says the file is watched")
	}

	d.cmd.Process.Signal(syscall.SIGHUP)
	d.waitOutput(`"added":["added"]`, 10*time.Second)
	e.keepsRunning("kept", "added")
}
