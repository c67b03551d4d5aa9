package app_test

import (
	"context"
	"fmt"
	"github.com/cronlock/cronlock/internal/testlog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/cronlock/cronlock/internal/app"
	"github.com/cronlock/cronlock/internal/jobstore"
	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/lock"
	"github.com/cronlock/cronlock/scheduler"
)

// permissionsConf returns the nats-server configuration documented in
// PERMISSIONS.md, with test passwords and the extra publish subjects given.
func permissionsConf(t *testing.T, extra ...string) string {
	t.Helper()
	doc, err := app.PermissionsConf()
	if err != nil {
		t.Fatal(err)
	}
	conf := strings.NewReplacer("ADMIN_PASSWORD", "admin-pw", "CRONLOCK_PASSWORD", "cronlock-pw").Replace(doc)
	if len(extra) > 0 {
		const anchor = `"$KV.locks.>"`
		if !strings.Contains(conf, anchor) {
			t.Fatalf("PERMISSIONS.md: no %s", anchor)
		}
		conf = strings.Replace(conf, anchor, anchor+"\n"+`"`+strings.Join(extra, "\"\n\"")+`"`, 1)
	}
	return conf
}

// restrictedServer starts a server with the accounts of PERMISSIONS.md.
func restrictedServer(t *testing.T, extra ...string) string {
	return serverWithConf(t, permissionsConf(t, extra...))
}

// serverWithConf starts a server with the authorization block conf.
func serverWithConf(t *testing.T, conf string) string {
	t.Helper()
	srv := natstest.RunServer(t, natstest.Options{Configure: func(o *server.Options) {
		if err := o.ProcessConfigString(conf); err != nil {
			t.Fatalf("PERMISSIONS.md conf: %v", err)
		}
	}})
	return srv.ClientURL()
}

// restrictedConfig is a configuration for the restricted user whose job
// appends its token to out and takes 1.5 s, so that two replicas contend.
func restrictedConfig(t *testing.T, url, out string) string {
	return fmt.Sprintf(`
nats:
  url: %s
  user: cronlock
  password: cronlock-pw
lock: {lease: 2s, renew: 500ms}
http: {listen: ""}
log: {level: debug}
jobs:
  - name: perm.job
    schedule: "* * * * * *"
    shell: echo "$CRONLOCK_TOKEN" >> %s; sleep 1.5
`, url, yamlQuote(out))
}

// noViolations fails the test if the logs show a NATS error, such as a
// permissions violation.
func noViolations(t *testing.T, logs *testlog.Buffer) {
	t.Helper()
	s := logs.String()
	if strings.Contains(s, "Permissions Violation") || strings.Contains(s, `"message":"NATS error"`) {
		t.Errorf("NATS errors in the logs:\n%s", s)
	}
}

// TestLeastPrivilege runs two replicas and every operator operation as the
// restricted user of PERMISSIONS.md, with buckets an admin created.
func TestLeastPrivilege(t *testing.T) {
	t.Parallel()
	url := restrictedServer(t)
	_, adminJS := natstest.Connect(t, url, nats.UserInfo("admin", "admin-pw"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := lock.New(ctx, adminJS, lock.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := scheduler.New(ctx, adminJS, l, scheduler.Options{}); err != nil { // creates the history and replicas buckets
		t.Fatal(err)
	}
	l.Close()

	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	cfg := writeConfig(t, dir, restrictedConfig(t, url, out))
	logs := &testlog.Buffer{}
	_, stop1 := startDaemon(t, cfg, logs)
	_, stop2 := startDaemon(t, cfg, logs)
	waitFor(t, 20*time.Second, "three runs", func() bool { return len(lines(t, out)) >= 3 })

	cl, err := app.Dial(ctx, cfg, newLogger(t, logs))
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	if _, err := cl.Locks(ctx); err != nil {
		t.Errorf("Locks: %v", err)
	}
	if h, err := cl.History(ctx, 2); err != nil || len(h) != 1 || len(h[0].Runs) == 0 {
		t.Errorf("History = %v, %v; want the job's runs", h, err)
	}
	if _, err := cl.Unlock(ctx, "perm.job"); err != nil && !errorsIsNotHeld(err) {
		t.Errorf("Unlock: %v", err)
	}
	followsOutput(ctx, t, cl, "perm.job")
	cl.Close()
	stop1()
	stop2()
	noViolations(t, logs)
}

// TestLeastPrivilegeCreatesBuckets: with the four extra subjects that
// PERMISSIONS.md names, the restricted user creates the buckets itself.
func TestLeastPrivilegeCreatesBuckets(t *testing.T) {
	t.Parallel()
	url := restrictedServer(t, "$JS.API.INFO", "$JS.API.STREAM.CREATE.KV_locks", "$JS.API.STREAM.CREATE.KV_cronlock_history", "$JS.API.STREAM.CREATE.KV_cronlock_replicas")
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	cfg := writeConfig(t, dir, restrictedConfig(t, url, out))
	logs := &testlog.Buffer{}
	_, stop := startDaemon(t, cfg, logs)
	waitFor(t, 20*time.Second, "a run", func() bool { return len(lines(t, out)) >= 1 })
	stop()
	noViolations(t, logs)
}

// TestLeastPrivilegeInboxPrefix: with nats.inbox_prefix, the restricted
// user of PERMISSIONS.md may subscribe to its own prefix instead of
// _INBOX.>, as the document's section on it says; without the setting it
// is refused.
func TestLeastPrivilegeInboxPrefix(t *testing.T) {
	t.Parallel()
	const prefix = "_INBOX_cronlock"
	doc, err := os.ReadFile("PERMISSIONS.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"inbox_prefix: " + prefix, `allow: ["` + prefix + `.>", "cronlock.cronlock_history.trigger.>", "cronlock.cronlock_history.output.>"]`} {
		if !strings.Contains(string(doc), want) {
			t.Fatalf("PERMISSIONS.md does not document %s", want)
		}
	}
	conf := permissionsConf(t, "$JS.API.INFO", "$JS.API.STREAM.CREATE.KV_locks", "$JS.API.STREAM.CREATE.KV_cronlock_history", "$JS.API.STREAM.CREATE.KV_cronlock_replicas")
	if !strings.Contains(conf, `"_INBOX.>"`) {
		t.Fatal(`PERMISSIONS.md conf: no "_INBOX.>"`)
	}
	url := serverWithConf(t, strings.Replace(conf, `"_INBOX.>"`, `"`+prefix+`.>"`, 1))
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	yaml := restrictedConfig(t, url, out)
	logs := &testlog.Buffer{}

	// Without the prefix: replies cannot arrive.
	refused := writeConfig(t, dir, yaml)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	if cl, err := app.Dial(ctx, refused, newLogger(t, &testlog.Buffer{})); err == nil {
		cl.Close()
		t.Fatalf("Dial without nats.inbox_prefix succeeded; the test cannot tell the prefix is used")
	}
	cancel()

	cfg := writeConfig(t, dir, strings.Replace(yaml, "  password: cronlock-pw\n", "  password: cronlock-pw\n  inbox_prefix: "+prefix+"\n", 1))
	if cfg.NATS.InboxPrefix != prefix {
		t.Fatalf("config: inbox_prefix = %q", cfg.NATS.InboxPrefix)
	}
	_, stop := startDaemon(t, cfg, logs)
	waitFor(t, 20*time.Second, "two runs", func() bool { return len(lines(t, out)) >= 2 })
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := app.Dial(ctx, cfg, newLogger(t, logs))
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	if h, err := cl.History(ctx, 2); err != nil || len(h) != 1 || len(h[0].Runs) == 0 {
		t.Errorf("History = %v, %v; want the job's runs", h, err)
	}
	if _, err := cl.Locks(ctx); err != nil {
		t.Errorf("Locks: %v", err)
	}
	cl.Close()
	stop()
	noViolations(t, logs)
}

// TestLeastPrivilegeDeployment: with deployment set, the permissions of
// PERMISSIONS.md with the deployment's bucket names in place of the
// defaults (its section "Sharing a NATS account") are enough: a replica
// creates its buckets and runs, the operator commands read them.
func TestLeastPrivilegeDeployment(t *testing.T) {
	t.Parallel()
	names := strings.NewReplacer("KV_locks", "KV_cronlock_d1_locks", "$KV.locks.", "$KV.cronlock_d1_locks.",
		"cronlock_history", "cronlock_d1_history", "cronlock_replicas", "cronlock_d1_replicas")
	conf := names.Replace(permissionsConf(t, "$JS.API.INFO", "$JS.API.STREAM.CREATE.KV_locks",
		"$JS.API.STREAM.CREATE.KV_cronlock_history", "$JS.API.STREAM.CREATE.KV_cronlock_replicas"))
	if strings.Contains(conf, "KV_locks") || strings.Contains(conf, "KV_cronlock_history") {
		t.Fatalf("PERMISSIONS.md conf: a default bucket name left after renaming:\n%s", conf)
	}
	url := serverWithConf(t, conf)
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	cfg := writeConfig(t, dir, "deployment: d1\n"+restrictedConfig(t, url, out))
	if cfg.Lock.Bucket != "cronlock_d1_locks" || cfg.Replicas.Bucket != "cronlock_d1_replicas" {
		t.Fatalf("buckets %s, %s: want the deployment's", cfg.Lock.Bucket, cfg.Replicas.Bucket)
	}
	logs := &testlog.Buffer{}
	_, stop := startDaemon(t, cfg, logs)
	waitFor(t, 20*time.Second, "two runs", func() bool { return len(lines(t, out)) >= 2 })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := app.Dial(ctx, cfg, newLogger(t, logs))
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	if h, err := cl.History(ctx, 2); err != nil || len(h) != 1 || len(h[0].Runs) == 0 {
		t.Errorf("History = %v, %v; want the job's runs", h, err)
	}
	if reps, err := cl.Replicas(ctx); err != nil || len(reps) != 1 {
		t.Errorf("Replicas = %v, %v; want the daemon", reps, err)
	}
	cl.Close()
	stop()
	noViolations(t, logs)
}

// runtimeJobsSubjects are the publish subjects that PERMISSIONS.md adds for
// runtime jobs (the bucket cronlock_jobs): the same as each other bucket's.
var runtimeJobsSubjects = []string{
	"$KV.cronlock_jobs.>", "$JS.API.STREAM.INFO.KV_cronlock_jobs", "$JS.API.DIRECT.GET.KV_cronlock_jobs.>",
	"$JS.API.CONSUMER.CREATE.KV_cronlock_jobs.>", "$JS.API.CONSUMER.MSG.NEXT.KV_cronlock_jobs.>",
	"$JS.API.CONSUMER.DELETE.KV_cronlock_jobs.>",
}

// TestLeastPrivilegeRuntimeJobs: with the runtime jobs bucket's subjects
// (PERMISSIONS.md), the restricted user runs a runtime job and puts, reads,
// lists, deletes and reads the revisions of definitions.
func TestLeastPrivilegeRuntimeJobs(t *testing.T) {
	t.Parallel()
	if doc, err := os.ReadFile("PERMISSIONS.md"); err != nil || !strings.Contains(string(doc), strings.Join(runtimeJobsSubjects, "`, `")) {
		t.Fatalf("PERMISSIONS.md does not list the runtime jobs' subjects as %q (%v)", strings.Join(runtimeJobsSubjects, "`, `"), err)
	}
	url := restrictedServer(t, runtimeJobsSubjects...)
	_, adminJS := natstest.Connect(t, url, nats.UserInfo("admin", "admin-pw"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := lock.New(ctx, adminJS, lock.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := scheduler.New(ctx, adminJS, l, scheduler.Options{}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if _, err := jobstore.Open(ctx, adminJS, "cronlock_jobs", 1); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	cfg := writeConfig(t, dir, fmt.Sprintf(`
nats: {url: %s, user: cronlock, password: cronlock-pw}
lock: {lease: 2s, renew: 500ms}
http: {listen: ""}
runtime_jobs: {enabled: true}
kinds: [{name: k, shell: 'echo "$CRONLOCK_PAYLOAD" >> %s'}]
`, url, yamlQuote(out)))
	logs := &testlog.Buffer{}
	_, stop := startDaemon(t, cfg, logs)
	_, js := natstest.Connect(t, url, nats.UserInfo("cronlock", "cronlock-pw"))
	store, err := app.OpenJobStore(ctx, js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := store.Put(ctx, "rt", []byte(`{"name":"rt","schedule":"* * * * * *","kind":"k","payload":{"a":1}}`), 0, "test")
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	waitFor(t, 20*time.Second, "a run of the runtime job", func() bool { return len(lines(t, out)) >= 1 })
	if _, err := store.Get(ctx, "rt"); err != nil {
		t.Errorf("Get: %v", err)
	}
	if names, err := store.Names(ctx); err != nil || len(names) != 1 {
		t.Errorf("Names = %v, %v", names, err)
	}
	if _, err := store.Delete(ctx, "rt", rev, "test"); err != nil {
		t.Errorf("Delete: %v", err)
	}
	if revs, err := store.Revisions(ctx, "rt"); err != nil || len(revs) != 2 {
		t.Errorf("Revisions = %v, %v", revs, err)
	}
	stop()
	noViolations(t, logs)
}

// followsOutput fails the test unless a follower of the job's live output
// receives a message (the job runs every second) within 10 s.
func followsOutput(ctx context.Context, t *testing.T, cl *app.Client, name string) {
	t.Helper()
	f, err := cl.FollowOutput(ctx, name)
	if err != nil {
		t.Errorf("FollowOutput: %v", err)
		return
	}
	defer f.Stop()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if e, err := f.Next(ctx); err != nil || e.Run.Job != name {
		t.Errorf("following the live output: %+v, %v; want a message of the job's run", e, err)
	}
}
