package app_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/cronlock/cronlock/internal/testlog"
	"strings"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/app"
	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/scheduler"
)

// TestTriggerFollowsReloadAndShutdown: a replica takes trigger requests for
// the jobs of its configuration in effect (a job added by a reload, not one
// removed), and none once its shutdown has begun, while it still waits for
// a running job.
func TestTriggerFollowsReloadAndShutdown(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	yaml := func(jobs ...string) string {
		s := fmt.Sprintf("nats: {url: %s}\nlock: {lease: 2s, renew: 500ms, owner: replica}\nhttp: {listen: \"\"}\nshutdown_grace: 10s\njobs:\n", url)
		for _, j := range jobs {
			s += fmt.Sprintf("  - name: %s\n    schedule: \"@yearly\"\n    shell: %s\n", j, map[string]string{
				"first": `echo "first on $CRONLOCK_OWNER"`, "second": `"true"`, "slow": "sleep 3"}[j])
		}
		return s
	}
	dir := t.TempDir()
	cfg := writeConfig(t, dir, yaml("first", "slow"))
	logs := &testlog.Buffer{}
	d, stop := startDaemon(t, cfg, logs)
	waitFor(t, 10*time.Second, "ready", d.Ready)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := app.Dial(ctx, writeConfig(t, t.TempDir(), yaml("first", "second", "slow")), newLogger(t, logs))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	run, err := cl.TriggerRemote(ctx, "first", "test", 5*time.Second)
	if err != nil || run.Owner != "replica" || run.Status != scheduler.StatusRunning || run.ID == 0 {
		t.Fatalf("TriggerRemote(first) = %+v, %v; want a running run on the replica", run, err)
	}
	done, err := cl.AwaitRun(ctx, run)
	if err != nil || done.Status != scheduler.StatusSucceeded || done.ID != run.ID || done.Output != "first on replica\n" {
		t.Fatalf("AwaitRun = %+v, %v; want run %d succeeded with its output", done, err, run.ID)
	}

	writeConfig(t, dir, yaml("second", "slow"))
	if err := d.Reload(); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.TriggerRemote(ctx, "second", "test", 5*time.Second); err != nil {
		t.Errorf("TriggerRemote of a job added by a reload: %v", err)
	}
	if _, err := cl.TriggerRemote(ctx, "first", "test", time.Second); !errors.Is(err, app.ErrNoReplica) {
		t.Errorf("TriggerRemote of a job removed by a reload = %v, want ErrNoReplica", err)
	}

	slow, err := cl.TriggerRemote(ctx, "slow", "test", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	waitFor(t, 10*time.Second, "the shutdown to begin", func() bool { return strings.Contains(logs.String(), "shutting down") })
	if _, err := cl.TriggerRemote(ctx, "second", "test", time.Second); !errors.Is(err, app.ErrNoReplica) {
		t.Errorf("TriggerRemote during the shutdown = %v, want ErrNoReplica", err)
	}
	select {
	case <-stopped:
		t.Error("the daemon stopped before the slow run ended: the test did not trigger during the shutdown")
	default:
	}
	if r, err := cl.AwaitRun(ctx, slow); err != nil || r.Status != scheduler.StatusSucceeded {
		t.Errorf("the slow run, during the shutdown: %+v, %v; want succeeded", r, err)
	}
	<-stopped
}
