package config

import (
	"context"
	"crypto/sha256"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cronlock/cronlock/job"
)

const examplePath = "../../config.example.yaml"

// schemaKeys returns the field path of every key the file format has, with
// list indexes written "[]": "nats", "nats.embedded", ..., "jobs[].grace".
func schemaKeys(t reflect.Type, prefix string) []string {
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		p := join(prefix, name)
		keys = append(keys, p)
		switch {
		case f.Type == jobsType, f.Type == notifyTargetsType && prefix == "":
			// A job's notify targets have the keys of the top-level
			// ones, which document them.
			keys = append(keys, schemaKeys(f.Type.Elem(), p+"[]")...)
		case f.Type.Kind() == reflect.Struct && f.Type != durationType:
			keys = append(keys, schemaKeys(f.Type, p)...)
		}
	}
	return keys
}

var listIndex = regexp.MustCompile(`\[\d+\]`)

func TestExampleDocumentsEveryKey(t *testing.T) {
	t.Parallel()
	data := exampleWithCluster(t)
	d := newDecoder(examplePath, data)
	if d.decode() == nil || len(d.errs) > 0 {
		t.Fatalf("decode: %v", d.err())
	}
	// First line where each key (list indexes erased) is written non-null.
	written := map[string]int{}
	for p, l := range d.lines {
		if !d.set[p] {
			continue
		}
		p = listIndex.ReplaceAllString(p, "[]")
		if old, ok := written[p]; !ok || l < old {
			written[p] = l
		}
	}
	lines := strings.Split(string(data), "\n")
	keys := schemaKeys(reflect.TypeFor[Config](), "")
	if len(keys) < 40 { // 46 today; guards against a broken schemaKeys
		t.Fatalf("schemaKeys found only %d keys: %v", len(keys), keys)
	}
	for _, k := range keys {
		l, ok := written[k]
		if k == commentedOutKey {
			checkCommentedOut(t, string(data), ok)
			continue
		}
		if k == "http.read_token" {
			if ok || !strings.Contains(string(data), "\n  # read_token: ") {
				t.Errorf("%s: %s must be shown commented out (\"  # read_token: ...\")", examplePath, k)
			}
			continue
		}
		if !ok {
			t.Errorf("%s: key not set in %s", k, examplePath)
			continue
		}
		// A comment on the key's line or on the line just above it.
		if !strings.Contains(lines[l-1], " #") && !strings.HasPrefix(strings.TrimSpace(lines[l-2]), "#") {
			t.Errorf("%s:%d: key %s has no comment", examplePath, l, k)
		}
	}
}

// commentedOutKey is the one key the example documents commented out: a
// usable admin token must not ship in a file people copy.
const commentedOutKey = "http.admin_token"

// checkCommentedOut: http.admin_token is not set in the example, but shown
// commented out below the command that makes a token.
func checkCommentedOut(t *testing.T, example string, set bool) {
	t.Helper()
	if set {
		t.Errorf("%s: %s is set; it must stay commented out (a token in the example is a known token)", examplePath, commentedOutKey)
	}
	cmd := strings.Index(example, "#   "+AdminTokenCommand+"\n")
	key := strings.Index(example, "\n  # admin_token: ")
	if cmd < 0 || key < cmd {
		t.Errorf("%s: want %q in a comment, then the key commented out (\"  # admin_token: ...\")", examplePath, AdminTokenCommand)
	}
}

func TestExampleDecodes(t *testing.T) {
	t.Parallel()
	cfg, err := Load(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	grace := Duration(10 * time.Second)
	appendJSONL := []string{"sh", "-c", "cat >> notifications.jsonl; echo >> notifications.jsonl"}
	want := &Config{
		NATS: NATS{Name: "cronlock", Embedded: Embedded{StoreDir: filepath.Join(configDir(examplePath), ".cronlock/nats")}},
		Lock: Lock{
			Bucket: "locks", Lease: Duration(20 * time.Second), Renew: Duration(10 * time.Second),
			RetryBase: Duration(50 * time.Millisecond), RetryMax: Duration(500 * time.Millisecond),
			AcquireTimeout: Duration(500 * time.Millisecond), Replicas: 1,
		},
		History:       History{Bucket: "cronlock_history", Size: 20, OutputTail: 4096},
		Replicas:      Replicas{Bucket: "cronlock_replicas"},
		Replica:       Replica{Labels: map[string]string{"zone": "eu-1", "role": "batch"}},
		RuntimeJobs:   RuntimeJobs{Bucket: "cronlock_jobs", MaxJobs: DefaultMaxRuntimeJobs},
		HTTP:          HTTP{Listen: "127.0.0.1:8736", HTTPTransport: defaultHTTPTransport()},
		Log:           Log{Level: "info", Format: "json", OutputLinesPerSecond: 100, OutputBytesPerSecond: 65536},
		ShutdownGrace: Duration(30 * time.Second),
		ConfigWatch:   true,
		Notify: []NotifyTarget{{
			Webhook: "https://hooks.example.com/services/cronlock",
			Headers: map[string]Secret{"Authorization": "Bearer change-me"},
			Secret:  "change-me-too", On: []string{"failure", "missed", "recovered"},
		}, {Command: appendJSONL, Dir: configDir(examplePath), On: []string{"failure", "missed", "recovered", "anomaly", "suspended"}}},
		Jobs: []Job{{
			Name: "hello", Schedule: "*/10 * * * * *", Shell: "date; echo hello from $CRONLOCK_JOB",
			Grace: grace, Location: time.UTC,
		}, {
			Name: "tick", Schedule: "@every 30s", Command: []string{"sh", "-c", "echo tick $CRONLOCK_TICK"},
			Grace: grace, Location: time.UTC,
		}, {
			Name: "reports.minutely", Schedule: "0 * * * * *", Timezone: "Europe/Berlin",
			Command: []string{"sh", "-c", `echo "$GREETING from $(pwd)"; date -u`},
			Env:     map[string]string{"GREETING": "hello"}, Dir: "/tmp",
			Timeout: Duration(20 * time.Second), Retries: 2, RetryBackoff: Duration(5 * time.Second),
			StartingDeadline: Duration(30 * time.Second), OnInterrupt: "rerun", Jitter: Duration(2 * time.Second), Grace: grace, Location: berlin,
			SuspendAfterFailures: 5, Overlap: "queue", MaxParallel: 1, Group: "reports", GroupMaxRunning: 2,
			RunOn: "one", OnReplicas: map[string]string{"role": "batch"},
			Notify: []NotifyTarget{{
				Command: []string{"sh", "-c", "cat >> reports-failures.jsonl; echo >> reports-failures.jsonl"},
				On:      []string{"failure"},
			}},
		}, {
			Name: "calendar", Schedules: []string{"*/20 * * * * *", "*/30 * * * * *"}, Timezone: "Europe/Berlin",
			ExcludeDates: []string{"2026-12-25", "2027-01-01"},
			StartAt:      "2026-01-01T00:00:00+01:00", EndAt: "2030-01-01T00:00:00+01:00",
			Shell: "echo calendar tick $CRONLOCK_TICK", Grace: grace, Location: berlin,
			Cal: &job.Calendar{Schedules: []string{"*/20 * * * * *", "*/30 * * * * *"},
				ExcludeDates: []job.Date{{Year: 2026, Month: 12, Day: 25}, {Year: 2027, Month: 1, Day: 1}},
				StartAt:      time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", 3600)),
				EndAt:        time.Date(2030, 1, 1, 0, 0, 0, 0, time.FixedZone("", 3600))},
		}, {
			Name: "report.acme", Schedule: "30 * * * * *", Kind: "report",
			Payload: Payload(`{"tenant":"acme"}`), Command: []string{"sh", "-c", "echo report for $CRONLOCK_PAYLOAD"},
			Timeout: Duration(time.Minute), Grace: grace, Location: time.UTC,
		}, {
			Name: "christmas-eve", At: "2030-12-24T18:00:00+01:00", AfterRun: "keep",
			Shell: "echo one-off at $CRONLOCK_TICK", Grace: grace, Location: time.UTC,
			Cal: &job.Calendar{At: time.Date(2030, 12, 24, 18, 0, 0, 0, time.FixedZone("", 3600))},
		}},
		Kinds:  []Kind{{Name: "report", Command: []string{"sh", "-c", "echo report for $CRONLOCK_PAYLOAD"}, Timeout: Duration(time.Minute)}},
		Groups: map[string]Group{"reports": {MaxRunning: 2}},
		Path:   examplePath,
	}
	for i := range cfg.Jobs {
		if cfg.Jobs[i].Line == 0 {
			t.Errorf("jobs[%d].Line = 0", i)
		}
		cfg.Jobs[i].Line = 0
		for k := range cfg.Jobs[i].Notify {
			cfg.Jobs[i].Notify[k].Line = 0
		}
	}
	for k := range cfg.Notify {
		cfg.Notify[k].Line = 0
	}
	for k := range cfg.Kinds {
		cfg.Kinds[k].Line = 0
	}
	for name, g := range cfg.Groups {
		g.Line = 0
		cfg.Groups[name] = g
	}
	cfg.Digest = [sha256.Size]byte{} // of the bytes: not what this test checks
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("example:\n got %+v\nwant %+v", cfg, want)
	}

	// Every example job but the one-off ticks at least once a minute, so
	// a new user sees output quickly.
	now := time.Date(2026, 3, 29, 0, 59, 58, 0, time.UTC)
	for _, j := range cfg.Jobs {
		if j.At != "" {
			continue
		}
		s, err := j.Timing().ParsedSchedule()
		if err != nil {
			t.Fatal(err)
		}
		if next := s.Next(now); next.IsZero() || next.Sub(now) > time.Minute {
			t.Errorf("%s: next tick after %v is %v", j.Name, now, next)
		}
	}
}

// TestExampleJobsRun runs each example job's command the way the runner
// does (argv directly, shell with /bin/sh -c) to show they need no setup.
func TestExampleJobsRun(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("example jobs target Linux")
	}
	cfg, err := Load(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range cfg.Jobs {
		argv := j.Command
		if j.Shell != "" {
			argv = []string{"/bin/sh", "-c", j.Shell}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir = j.Dir
		cmd.Env = append(os.Environ(), "CRONLOCK_JOB="+j.Name, "CRONLOCK_TICK=2026-01-01T00:00:00Z")
		for k, v := range j.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil || len(out) == 0 {
			t.Errorf("%s: %v, output %q", j.Name, err, out)
		}
	}
}
