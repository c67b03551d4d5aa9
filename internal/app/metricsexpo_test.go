package app_test

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/internal/testlog"
)

// scrape fetches url with Accept-Encoding set to encoding ("" for none),
// without the client's transparent decompression, and returns the
// response and its body, decompressed when the server gzipped it.
func scrape(t *testing.T, url, encoding string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if encoding != "" {
		req.Header.Set("Accept-Encoding", encoding)
	}
	resp, err := (&http.Client{Transport: &http.Transport{DisableCompression: true}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body io.Reader = resp.Body
	if resp.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		body = gz
	}
	b, err := io.ReadAll(body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// families parses a text exposition (the parser refuses a family whose
// series are not contiguous under one HELP and TYPE) and lists its
// families in the order of the page.
func families(t *testing.T, page string) (map[string]*dto.MetricFamily, []string) {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(page))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, page)
	}
	var order []string
	for _, line := range strings.Split(page, "\n") {
		if name, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, _, _ = strings.Cut(name, " ")
			order = append(order, name)
		}
	}
	return mfs, order
}

// TestMetricsExposition: /metrics of a daemon (whose per-job families are
// written straight to the response) is one text page, plain or gzipped as
// the client asks, in which every family appears once, in name order as
// promhttp sorts them, the per-job families among them with their series;
// and name[] selects families, as promhttp's handler does.
func TestMetricsExposition(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	cfg := writeConfig(t, t.TempDir(), fmt.Sprintf(`nats: {url: %s}
lock: {lease: 2s, renew: 500ms}
http: {listen: "127.0.0.1:0"}
config_watch: false
jobs:
  - {name: x.beat, schedule: "* * * * * *", shell: "true"}
  - {name: x.hourly, schedule: "@every 1h", timezone: Europe/Paris, shell: "true"}
  - {name: x.off, schedule: "0 3 * * *", suspended: true, shell: "true"}
`, url))
	d, _ := startDaemon(t, cfg, &testlog.Buffer{})
	base := "http://" + d.HTTPAddr().String() + "/metrics"
	waitFor(t, 10*time.Second, "a run of x.beat in /metrics", func() bool {
		_, page := scrape(t, base, "")
		return strings.Contains(page, `cronlock_runs_total{job="x.beat",status="succeeded"} `) &&
			!strings.Contains(page, `cronlock_runs_total{job="x.beat",status="succeeded"} 0`)
	})

	for _, enc := range []string{"", "gzip", "gzip;q=0, identity"} {
		resp, page := scrape(t, base, enc)
		wantGzip := enc == "gzip"
		if got := resp.Header.Get("Content-Encoding") == "gzip"; got != wantGzip {
			t.Errorf("Accept-Encoding %q: gzipped %v, want %v", enc, got, wantGzip)
		}
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4; charset=utf-8") {
			t.Errorf("Content-Type %q, want the text format 0.0.4", ct)
		}
		mfs, order := families(t, page)
		if !slices.IsSorted(order) || len(slices.Compact(slices.Clone(order))) != len(order) {
			t.Errorf("Accept-Encoding %q: families not each once in name order: %v", enc, order)
		}
		for _, name := range []string{"cronlock_job_definition_conflicts_total", "cronlock_job_info", "cronlock_job_interval_seconds",
			"cronlock_job_next_run_timestamp_seconds", "cronlock_job_suspended", "cronlock_leases_lost_total", "cronlock_runs_total",
			"cronlock_state_anomalies_total", "cronlock_ticks_missed_total", "cronlock_run_duration_seconds", "cronlock_live_replicas",
			"cronlock_build_info", "go_goroutines", "process_resident_memory_bytes", "promhttp_metric_handler_errors_total"} {
			if mfs[name] == nil {
				t.Errorf("Accept-Encoding %q: /metrics lacks %s", enc, name)
			}
		}
		for _, series := range []string{
			`cronlock_job_info{job="x.hourly",schedule="@every 1h",timezone="Europe/Paris"} 1`,
			`cronlock_job_suspended{job="x.off"} 1`,
			`cronlock_job_suspended{job="x.beat"} 0`,
			`cronlock_job_interval_seconds{job="x.hourly"} 3600`,
			`cronlock_ticks_missed_total{job="x.off",reason="lock_held"} 0`,
			`promhttp_metric_handler_errors_total{cause="encoding"} 0`,
		} {
			if !strings.Contains(page, "\n"+series+"\n") {
				t.Errorf("Accept-Encoding %q: /metrics lacks %s", enc, series)
			}
		}
	}

	_, page := scrape(t, base+"?name[]=cronlock_job_info&name[]=go_goroutines&name[]=cronlock_runs_total", "gzip")
	if _, order := families(t, page); !slices.Equal(order, []string{"cronlock_job_info", "cronlock_runs_total", "go_goroutines"}) {
		t.Errorf("name[] selects %v, want cronlock_job_info, cronlock_runs_total, go_goroutines:\n%s", order, page)
	}
}
