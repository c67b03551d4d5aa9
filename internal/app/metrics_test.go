package app_test

import (
	"fmt"
	"github.com/cronlock/cronlock/internal/testlog"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/app"
	"github.com/cronlock/cronlock/internal/natstest"
)

// metricValue returns the value of the sample whose name and labels are
// exactly series (e.g. `cronlock_config_reloads_total{result="failure"}`)
// in a /metrics page.
func metricValue(t *testing.T, page, series string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("/metrics has no %s:\n%s", series, page)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatalf("%s: %v", series, err)
	}
	return v
}

// TestReloadAndBuildMetrics: /metrics of a running daemon carries
// cronlock_build_info with the version, revision and goversion labels, and
// cronlock_config_last_reload_successful follows the result of the last
// reload: 1 at start, 0 after a rejected file, 1 again after a good one,
// whose time the success timestamp records.
func TestReloadAndBuildMetrics(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	dir := t.TempDir()
	head := fmt.Sprintf("nats: {url: %s}\nlock: {lease: 2s, renew: 500ms}\nhttp: {listen: \"127.0.0.1:0\"}\nconfig_watch: false\njobs:\n", url)
	good := head + "  - name: m.job\n    schedule: \"@every 1h\"\n    shell: \"true\"\n"
	cfg := writeConfig(t, dir, good)
	d, _ := startDaemon(t, cfg, &testlog.Buffer{})
	metrics := func() string { _, body := get(t, "http://"+d.HTTPAddr().String()+"/metrics"); return body }

	waitFor(t, 10*time.Second, "the job's series in /metrics", func() bool {
		return strings.Contains(metrics(), `cronlock_job_info{job="m.job",schedule="@every 1h",timezone="UTC"} 1`)
	})
	page := metrics()
	for _, series := range []string{`cronlock_runs_total{job="m.job",status="failed"}`, `cronlock_ticks_missed_total{job="m.job",reason="lock_held"}`, `cronlock_leases_lost_total{job="m.job"}`} {
		if v := metricValue(t, page, series); v != 0 {
			t.Errorf("%s = %v at start, want 0", series, v)
		}
	}
	info := fmt.Sprintf(`cronlock_build_info{goversion=%q,revision=%q,version=%q}`, runtime.Version(), app.Revision(), app.Version())
	if v := metricValue(t, page, info); v != 1 {
		t.Errorf("%s = %v, want 1", info, v)
	}
	if v := metricValue(t, page, "cronlock_config_last_reload_successful"); v != 1 {
		t.Errorf("cronlock_config_last_reload_successful = %v at start, want 1", v)
	}
	started := metricValue(t, page, "cronlock_config_last_reload_success_timestamp_seconds")
	if now := float64(time.Now().Unix()); started < now-300 || started > now+1 {
		t.Errorf("success timestamp at start = %v, want about %v", started, now)
	}

	path := filepath.Join(dir, "cronlock.yaml")
	if err := os.WriteFile(path, []byte(head+"  - name: m.job\n    schedule: \"0 61 * * * *\"\n    shell: \"true\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := d.Reload(); err == nil {
		t.Fatal("Reload of an invalid file: no error")
	}
	page = metrics()
	for series, want := range map[string]float64{
		"cronlock_config_last_reload_successful":                0,
		`cronlock_config_reloads_total{result="failure"}`:       1,
		`cronlock_config_reloads_total{result="success"}`:       0,
		"cronlock_config_last_reload_success_timestamp_seconds": started,
	} {
		if v := metricValue(t, page, series); v != want {
			t.Errorf("after a rejected reload: %s = %v, want %v", series, v, want)
		}
	}

	// The timestamp has a resolution of a second or better; make sure the
	// next success is in a later second.
	waitFor(t, 5*time.Second, "the clock to pass the start", func() bool { return float64(time.Now().Unix()) > started })
	added := "  - name: m.added\n    schedule: \"@daily\"\n    shell: \"true\"\n"
	if err := os.WriteFile(path, []byte(strings.Replace(good, "@every 1h", "@every 2h", 1)+added), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := d.Reload(); err != nil {
		t.Fatal(err)
	}
	page = metrics()
	if v := metricValue(t, page, "cronlock_config_last_reload_successful"); v != 1 {
		t.Errorf("cronlock_config_last_reload_successful = %v after a good reload, want 1", v)
	}
	if v := metricValue(t, page, "cronlock_config_last_reload_success_timestamp_seconds"); v <= started {
		t.Errorf("success timestamp = %v after a good reload, want later than %v", v, started)
	}
	// The reload's changes show in the job series: the new schedule only,
	// and the added job's counters at 0.
	if v := metricValue(t, page, `cronlock_job_info{job="m.job",schedule="@every 2h",timezone="UTC"}`); v != 1 ||
		strings.Contains(page, `schedule="@every 1h"`) {
		t.Errorf("cronlock_job_info after the reload does not show the new schedule alone:\n%s", page)
	}
	if v := metricValue(t, page, `cronlock_runs_total{job="m.added",status="failed"}`); v != 0 {
		t.Errorf("the added job's failed runs = %v, want 0", v)
	}
}
