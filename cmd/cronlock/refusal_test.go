package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/cronlock/cronlock/internal/app"
	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/lock"
	"github.com/cronlock/cronlock/scheduler"
)

// refusalBound is how long an operator command refused a permission may
// take, process start included: it fails within 2 s (a 30 s timeout
// before), with room for a loaded machine.
const refusalBound = 5 * time.Second

// restrictedURL starts a server with the accounts block of PERMISSIONS.md,
// edited by edit, and returns its URL.
func restrictedURL(t *testing.T, edit func(string) string) string {
	t.Helper()
	doc, err := app.PermissionsConf()
	if err != nil {
		t.Fatal(err)
	}
	conf := edit(strings.NewReplacer("ADMIN_PASSWORD", "admin-pw", "CRONLOCK_PASSWORD", "cronlock-pw").Replace(doc))
	srv := natstest.RunServer(t, natstest.Options{Configure: func(o *server.Options) {
		if err := o.ProcessConfigString(conf); err != nil {
			t.Fatalf("PERMISSIONS.md conf block: %v", err)
		}
	}})
	return srv.ClientURL()
}

// withoutLine is an edit of restrictedURL that removes the line holding s.
func withoutLine(t *testing.T, s string) func(string) string {
	return func(conf string) string {
		lines := strings.Split(conf, "\n")
		for i, l := range lines {
			if strings.Contains(l, s) {
				return strings.Join(append(lines[:i:i], lines[i+1:]...), "\n")
			}
		}
		t.Fatalf("PERMISSIONS.md conf block: no line with %s", s)
		return conf
	}
}

// createBuckets creates the lock, history and replicas buckets as the
// admin of PERMISSIONS.md.
func createBuckets(t *testing.T, url string) {
	t.Helper()
	_, js := natstest.Connect(t, url, nats.UserInfo("admin", "admin-pw"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := lock.New(ctx, js, lock.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := scheduler.New(ctx, js, l, scheduler.Options{}); err != nil {
		t.Fatal(err)
	}
}

// restrictedCLIConfig is a configuration for the restricted user with the
// job "refused".
func restrictedCLIConfig(t *testing.T, url, extra string) string {
	dir := t.TempDir()
	return writeFile(t, dir, "cronlock.yaml", fmt.Sprintf(`
nats: {url: %s, user: cronlock, password: cronlock-pw}
lock: {lease: 2s, renew: 500ms, owner: refused-replica}
http: {listen: ""}
%s
jobs:
  - name: refused
    schedule: "* * * * * *"
    shell: echo "ran $CRONLOCK_TOKEN" >> %q
`, url, extra, filepath.Join(dir, "ran")))
}

// TestOperatorRefusedPermission: every operator command run as a NATS user
// that lacks a permission it needs fails within 2 s (refusalBound on a
// loaded machine), exit 1, naming the permission, instead of after its
// 30 s timeout with "NATS did not answer in time": before the lock bucket
// is open (no bucket exists and the user may not publish to $JS.API.INFO
// to create one), after it (reading the history), and for a subscription
// (the replies' inbox). next, whose look at NATS is optional, warns
// naming it and exits 0.
func TestOperatorRefusedPermission(t *testing.T) {
	t.Parallel()
	noBuckets := restrictedCLIConfig(t, restrictedURL(t, func(s string) string { return s }), "")
	readURL := restrictedURL(t, withoutLine(t, `"$JS.API.DIRECT.GET.KV_cronlock_history.>"`))
	createBuckets(t, readURL)
	noHistoryRead := restrictedCLIConfig(t, readURL, "")
	noInbox := restrictedCLIConfig(t, restrictedURL(t, func(s string) string {
		return strings.Replace(s, `"_INBOX.>"`, `"_INBOX_elsewhere.>"`, 1)
	}), "")
	const info = `Permissions Violation for Publish to "$JS.API.INFO"`
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"locks", []string{"locks", "-c", noBuckets}, exitFailure, info},
		{"locks --json", []string{"locks", "-c", noBuckets, "--json"}, exitFailure, info},
		{"status", []string{"status", "-c", noBuckets}, exitFailure, info},
		{"unlock", []string{"unlock", "-c", noBuckets, "--force", "refused"}, exitFailure, info},
		{"suspend", []string{"suspend", "-c", noBuckets, "refused"}, exitFailure, info},
		{"resume", []string{"resume", "-c", noBuckets, "refused"}, exitFailure, info},
		{"replicas", []string{"replicas", "-c", noBuckets}, exitFailure, info},
		{"trigger", []string{"trigger", "-c", noBuckets, "refused"}, exitFailure, info},
		{"trigger --local", []string{"trigger", "-c", noBuckets, "--local", "refused"}, exitFailure, info},
		{"next", []string{"next", "-c", noBuckets}, exitOK, info},
		{"status, history read refused", []string{"status", "-c", noHistoryRead}, exitFailure,
			`Permissions Violation for Publish to "$JS.API.DIRECT.GET.KV_cronlock_history.`},
		{"locks, inbox refused", []string{"locks", "-c", noInbox}, exitFailure,
			`Permissions Violation for Subscription to "_INBOX.`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runBinary(t, tc.args...)
			t.Logf("exit %d after %v", r.code, r.took.Round(time.Millisecond))
			if r.code != tc.code || !strings.Contains(r.stderr, tc.want) || r.took > refusalBound ||
				strings.Contains(r.stderr, "did not answer in time") {
				t.Errorf("cronlock %q: exit %d after %v, want exit %d within %v naming %s\nstdout:\n%s\nstderr:\n%s",
					tc.args, r.code, r.took.Round(time.Millisecond), tc.code, refusalBound, tc.want, r.stdout, r.stderr)
			}
		})
	}
}

// TestDaemonRefusedPermission: `cronlock run` as a user whose buckets do
// not exist and who may not create them logs the refused permission as
// such (an error naming it and its subject, not a timeout), once for
// several refused attempts, keeps retrying, and starts once an admin has
// created the buckets.
func TestDaemonRefusedPermission(t *testing.T) {
	t.Parallel()
	url := restrictedURL(t, func(s string) string { return s })
	cfg := restrictedCLIConfig(t, url, "log: {level: debug}")
	d := startDaemon(t, filepath.Dir(cfg), cfg)
	const retried = `"message":"cannot open the buckets; retrying"`
	waitFor(t, 15*time.Second, "two refused attempts", func() bool { return strings.Count(d.out.String(), retried) >= 2 })
	out := d.out.String()
	var refusals []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "NATS refused a permission") {
			refusals = append(refusals, l)
		}
	}
	if len(refusals) != 1 || !strings.Contains(refusals[0], `"level":"error"`) ||
		!strings.Contains(refusals[0], `Permissions Violation for Publish to \"$JS.API.INFO\"`) ||
		!strings.Contains(refusals[0], `"subject":"$JS.API.INFO"`) {
		t.Errorf("want one error line naming the refused permission and its subject for the refused attempts:\n%s", out)
	}
	if strings.Contains(out, "not answering") || strings.Contains(out, "deadline exceeded") {
		t.Errorf("the refusal is logged as a timeout:\n%s", out)
	}
	createBuckets(t, url)
	d.waitOutput(`"message":"scheduler running"`, 20*time.Second)
	waitFor(t, 10*time.Second, "a run", func() bool { return len(fileLines(t, filepath.Join(filepath.Dir(cfg), "ran"))) >= 1 })
}
