package config

import (
	"fmt"
	"net"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cronlock/cronlock/job"
)

// FuzzParse checks that Parse never panics, that every error line is
// "fuzz.yaml...", and that a Config it accepts satisfies every documented
// rule. Seeds: testdata/fuzz/FuzzParse and the example file.
func FuzzParse(f *testing.F) {
	if data, err := os.ReadFile(examplePath); err == nil {
		f.Add(data)
	}
	f.Add([]byte(job0))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse("fuzz.yaml", data)
		if err != nil {
			if cfg != nil {
				t.Fatal("non-nil Config with an error")
			}
			for _, l := range errLines(err) {
				if !strings.HasPrefix(l, "fuzz.yaml:") {
					t.Fatalf("error line %q does not start with fuzz.yaml:", l)
				}
			}
			return
		}
		checkValid(t, cfg)
	})
}

var bucketRe = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// checkValid fails t unless cfg satisfies the rules documented on Config.
func checkValid(t *testing.T, cfg *Config) {
	t.Helper()
	fail := func(format string, args ...any) { t.Helper(); t.Fatalf(format, args...) }

	if cfg.Path != "fuzz.yaml" {
		fail("Path = %q", cfg.Path)
	}
	n := cfg.NATS
	if n.URL == "" && n.Embedded.StoreDir == "" {
		fail("embedded server without store_dir")
	}
	auth := 0
	for _, set := range []bool{n.CredsFile != "", n.NKeyFile != "", n.Token != "", n.User != ""} {
		if set {
			auth++
		}
	}
	if auth > 1 || (n.User == "") != (n.Password == "") || (n.TLS.CertFile == "") != (n.TLS.KeyFile == "") {
		fail("contradictory auth/TLS: %+v", n)
	}
	for _, addr := range []string{n.Embedded.Listen, cfg.HTTP.Listen} {
		if addr != "" {
			if _, _, err := net.SplitHostPort(addr); err != nil {
				fail("listen %q: %v", addr, err)
			}
		}
	}
	l := cfg.Lock
	if !bucketRe.MatchString(l.Bucket) || !bucketRe.MatchString(cfg.History.Bucket) || l.Bucket == cfg.History.Bucket {
		fail("buckets %q %q", l.Bucket, cfg.History.Bucket)
	}
	if l.Lease < Duration(time.Second) || l.Lease%Duration(time.Second) != 0 || l.Renew <= 0 || l.Renew >= l.Lease ||
		l.RetryBase <= 0 || l.RetryBase > l.RetryMax || l.AcquireTimeout <= 0 || l.Replicas < 1 || l.Replicas > 5 {
		fail("bad lock settings %+v", l)
	}
	if cfg.History.Size < 1 || cfg.History.Size > 64 {
		fail("history.size %d", cfg.History.Size)
	}
	if !strings.Contains(" debug info warn error ", " "+cfg.Log.Level+" ") || (cfg.Log.Format != "json" && cfg.Log.Format != "console") {
		fail("log %+v", cfg.Log)
	}
	if cfg.ShutdownGrace < 0 {
		fail("shutdown_grace %v", cfg.ShutdownGrace)
	}
	if len(cfg.Jobs) == 0 {
		fail("no jobs")
	}
	names := map[string]bool{}
	for _, j := range cfg.Jobs {
		if err := job.ValidateName(j.Name); err != nil || names[j.Name] {
			fail("job name %q: %v (duplicate %v)", j.Name, err, names[j.Name])
		}
		names[j.Name] = true
		if j.Location == nil || j.Line < 1 {
			fail("job %q: Location %v, Line %d", j.Name, j.Location, j.Line)
		}
		if _, err := j.Timing().ParsedSchedule(); err != nil {
			fail("job %q: %v", j.Name, err)
		}
		if (len(j.Command) > 0) == (j.Shell != "") || (len(j.Command) > 0 && j.Command[0] == "") ||
			(j.Command == nil && strings.TrimSpace(j.Shell) == "") {
			fail("job %q: command %q, shell %q", j.Name, j.Command, j.Shell)
		}
		if j.Timeout < 0 || j.RetryBackoff < 0 || j.StartingDeadline < 0 || j.Grace < 0 || j.Retries < 0 {
			fail("job %q: negative setting %+v", j.Name, j)
		}
		if j.Retries > job.MaxRetries || j.Timeout > Duration(job.MaxTimeout) || j.Jitter > Duration(job.MaxJitter) ||
			j.Grace > MaxJobGrace || j.StartingDeadline > Duration(job.MaxStartingDeadline) {
			fail("job %q: setting above its bound %+v", j.Name, j)
		}
		for k := range j.Env {
			if k == "" || strings.ContainsAny(k, "=\x00") {
				fail("job %q: env name %q", j.Name, k)
			}
		}
	}

	// The fmt rendering does not depend on the secrets' values.
	other := *cfg
	other.NATS.Token = Secret(strings.Repeat("x", len(n.Token)))
	other.NATS.Password = Secret(strings.Repeat("y", len(n.Password)))
	if a, b := fmt.Sprintf("%+v", *cfg), fmt.Sprintf("%+v", other); a != b {
		fail("rendering depends on secrets:\n%s\n%s", a, b)
	}
}
