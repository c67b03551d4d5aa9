package scheduler_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/lock"
	"github.com/cronlock/cronlock/scheduler"
)

// TestOptionsValidate: Validate refuses each bad setting with an
// *OptionError naming its field, whatever the other fields hold (a
// negative MaxConcurrentRuns used to pass when HistorySize was 0), and New
// refuses the same.
func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	if err := (scheduler.Options{}).Validate(); err != nil {
		t.Errorf("zero Options: %v", err)
	}
	for _, c := range []struct {
		o     scheduler.Options
		field string
	}{
		{scheduler.Options{MaxConcurrentRuns: -1}, "MaxConcurrentRuns"},
		{scheduler.Options{MaxConcurrentRuns: -1, HistorySize: 5}, "MaxConcurrentRuns"},
		{scheduler.Options{HistorySize: -1}, "HistorySize"},
		{scheduler.Options{AcquireTimeout: -time.Second}, "AcquireTimeout"},
		{scheduler.Options{ShutdownGrace: -time.Second}, "ShutdownGrace"},
		{scheduler.Options{ShutdownGrace: scheduler.MaxShutdownGrace + time.Second}, "ShutdownGrace"},
		{scheduler.Options{HistorySize: scheduler.MaxHistorySize + 1}, "HistorySize"},
		{scheduler.Options{ReplicaLabels: map[string]string{"role": "a,b"}}, "ReplicaLabels"},
	} {
		err := c.o.Validate()
		var oe *scheduler.OptionError
		if !errors.As(err, &oe) || oe.Field != c.field || !strings.Contains(err.Error(), "Options."+c.field) {
			t.Errorf("%+v: Validate = %v, want an OptionError for %s", c.o, err, c.field)
		}
	}
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	_, js := natstest.Connect(t, url)
	l, err := lock.New(context.Background(), js, lockOpts("me"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var oe *scheduler.OptionError
	if _, err := scheduler.New(context.Background(), js, l, scheduler.Options{MaxConcurrentRuns: -1}); !errors.As(err, &oe) || oe.Field != "MaxConcurrentRuns" {
		t.Errorf("New with MaxConcurrentRuns -1: %v, want an OptionError for MaxConcurrentRuns", err)
	}
}

// TestReplicaIsTheLockOwner: the replica's identity is the lock's owner id,
// given once: an empty ReplicaID takes it, a different one is refused.
func TestReplicaIsTheLockOwner(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	_, js := natstest.Connect(t, url)
	l, err := lock.New(context.Background(), js, lockOpts("owner-1"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var oe *scheduler.OptionError
	_, err = scheduler.New(context.Background(), js, l, scheduler.Options{ReplicaID: "someone-else"})
	if !errors.As(err, &oe) || oe.Field != "ReplicaID" || !strings.Contains(err.Error(), `"owner-1"`) {
		t.Errorf("New with a ReplicaID other than the lock's owner: %v, want an OptionError for ReplicaID naming owner-1", err)
	}
	if _, err := scheduler.New(context.Background(), js, l, scheduler.Options{ReplicaID: "owner-1"}); err != nil {
		t.Errorf("New with ReplicaID equal to the lock's owner: %v", err)
	}
	r := newReplica(t, url, lockOpts("owner-2"), scheduler.Options{Logger: testLogger(t, "owner-2")})
	r.start(t)
	waitFor(t, 10*time.Second, "the replica announced as the lock's owner", func() bool {
		live, err := scheduler.ListReplicas(context.Background(), js, "")
		return err == nil && len(live) == 1 && live[0].ID == "owner-2"
	})
}

// defaultLoggerChild runs TestDefaultLoggerWarnsOnStderr's child: a
// scheduler without a Logger, on the NATS server at its value, that
// triggers a failing job.
const defaultLoggerChild = "CRONLOCK_TEST_DEFAULT_LOGGER_NATS"

// TestDefaultLoggerWarnsOnStderr: an embedding program that sets no
// Options.Logger still sees a failed run: the zero Logger writes warnings
// to stderr (not info lines).
func TestDefaultLoggerWarnsOnStderr(t *testing.T) {
	if url := os.Getenv(defaultLoggerChild); url != "" {
		runDefaultLoggerChild(t, url)
		return
	}
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestDefaultLoggerWarnsOnStderr$", "-test.count=1")
	cmd.Env = append(os.Environ(), defaultLoggerChild+"="+url)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if out, err := cmd.Output(); err != nil {
		t.Fatalf("child: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	got := stderr.String()
	for _, want := range []string{`"level":"warn"`, `"job":"embedded.fails"`, `"status":"failed"`, `"error":"disk full"`} {
		if !strings.Contains(got, want) {
			t.Errorf("stderr lacks %s:\n%s", want, got)
		}
	}
	if strings.Contains(got, `"level":"info"`) {
		t.Errorf("stderr has info lines; the default logs warnings and errors only:\n%s", got)
	}
}

func runDefaultLoggerChild(t *testing.T, url string) {
	_, js := natstest.Connect(t, url)
	l, err := lock.New(context.Background(), js, lockOpts("child"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s, err := scheduler.New(context.Background(), js, l, scheduler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Add(job.Job{Name: "embedded.fails", Schedule: "@yearly", Run: func(context.Context) error {
		return errors.New("disk full")
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TriggerRun(context.Background(), "embedded.fails", nil); err == nil {
		t.Fatal("the failing job succeeded")
	}
}
