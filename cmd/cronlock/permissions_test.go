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

// TestLeastPrivilege runs `cronlock run` (and a job), `locks`, `status`
// and `trigger` (taken by the replica over NATS) as a user restricted to
// the permissions of PERMISSIONS.md, against a server configured with its
// accounts block; an admin created the buckets.
func TestLeastPrivilege(t *testing.T) {
	t.Parallel()
	doc, err := app.PermissionsConf()
	if err != nil {
		t.Fatal(err)
	}
	conf := strings.NewReplacer("ADMIN_PASSWORD", "admin-pw", "CRONLOCK_PASSWORD", "cronlock-pw").Replace(doc)
	srv := natstest.RunServer(t, natstest.Options{Configure: func(o *server.Options) {
		if err := o.ProcessConfigString(conf); err != nil {
			t.Fatalf("PERMISSIONS.md conf block: %v", err)
		}
	}})
	url := srv.ClientURL()

	// The admin creates the buckets (see PERMISSIONS.md).
	_, js := natstest.Connect(t, url, nats.UserInfo("admin", "admin-pw"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := lock.New(ctx, js, lock.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := scheduler.New(ctx, js, l, scheduler.Options{}); err != nil { // creates the history and replicas buckets
		t.Fatal(err)
	}
	l.Close()

	// The restricted user cannot create buckets: a check that the server
	// enforces the block at all.
	violations := make(chan error, 1)
	rnc, _ := natstest.Connect(t, url, nats.UserInfo("cronlock", "cronlock-pw"),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case violations <- err:
			default:
			}
		}))
	if err := rnc.Publish("$JS.API.STREAM.CREATE.KV_not_allowed", nil); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-violations:
		if !strings.Contains(err.Error(), "Permissions Violation") {
			t.Fatalf("restricted publish: %v, want a permissions violation", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the restricted user may create streams: the conf block is not enforced")
	}

	dir := t.TempDir()
	out := filepath.Join(dir, "ran")
	cfg := writeFile(t, dir, "cronlock.yaml", fmt.Sprintf(`
nats: {url: %s, user: cronlock, password: cronlock-pw}
lock: {lease: 2s, renew: 500ms, owner: restricted}
http: {listen: ""}
groups:
  least: {max_running: 1}
jobs:
  - name: least.group.a
    schedule: "* * * * * *"
    group: least
    starting_deadline: 3s
    shell: sleep 0.3; echo a >> %[2]q.group
  - name: least.group.b
    schedule: "* * * * * *"
    group: least
    starting_deadline: 3s
    shell: sleep 0.3; echo b >> %[2]q.group
  - name: least.privilege
    schedule: "* * * * * *"
    shell: echo "$CRONLOCK_TOKEN" >> %[2]q
  - name: least.trigger
    schedule: "@yearly"
    shell: echo triggered
`, url, out))
	d := startDaemon(t, dir, cfg)
	waitFor(t, 20*time.Second, "two runs", func() bool { return len(fileLines(t, out)) >= 2 })
	// The group's slots and its line of waiting ticks are leases in the
	// lock bucket: both jobs run, one at a time.
	waitFor(t, 20*time.Second, "runs of both jobs of the group", func() bool {
		l := strings.Join(fileLines(t, out+".group"), " ")
		return strings.Contains(l, "a") && strings.Contains(l, "b")
	})
	for _, args := range [][]string{{"locks", "-c", cfg, "--json"}, {"status", "-c", cfg, "--json"}, {"trigger", "-c", cfg, "least.trigger"}} {
		r := cronlock(t, nil, args...)
		if r.code != 0 || strings.Contains(r.stderr, "iolation") {
			t.Errorf("cronlock %q as the restricted user: exit %d\n%s", args, r.code, r.stderr)
		}
		if args[0] == "trigger" && !strings.Contains(r.stdout, "started on restricted") {
			t.Errorf("cronlock trigger as the restricted user: the replica did not run it:\n%s", r.stdout)
		}
	}
	d.stop()
	if s := d.out.String(); d.waitErr != nil || strings.Contains(s, "Permissions Violation") || strings.Contains(s, `"level":"error"`) {
		t.Errorf("cronlock run as the restricted user: %v\n%s", d.waitErr, s)
	}
	if strings.Contains(d.out.String(), "cronlock-pw") {
		t.Error("the password appears in the log")
	}
}
