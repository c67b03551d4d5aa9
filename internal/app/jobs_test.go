package app_test

import (
	"context"
	"errors"
	"github.com/cronlock/cronlock/internal/testlog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/app"
	"github.com/cronlock/cronlock/internal/config"
	"github.com/cronlock/cronlock/internal/proc"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/lock"
)

func TestJobEnvironment(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "env")
	cj := config.Job{
		Name:     "env.job",
		Schedule: "@every 1m",
		Shell:    `env | grep -E '^(CRONLOCK_|GREETING=)' | sort > "$OUT"; pwd >> "$OUT"`,
		Env:      map[string]string{"GREETING": "hi", "OUT": out, "CRONLOCK_TOKEN": "overridden by cronlock"},
		Dir:      dir,
		Location: time.UTC,
	}
	logs := &testlog.Buffer{}
	j := app.Job(cj, app.JobOptions{Lease: 20 * time.Second}, newLogger(t, logs))
	tick := time.Date(2026, 3, 29, 3, 0, 0, 0, time.FixedZone("CEST", 2*3600))
	ctx := job.NewContext(context.Background(), job.RunInfo{Job: cj.Name, Tick: tick, Attempt: 2, Owner: "host:42", Token: 1234})
	if err := j.Run(ctx); err != nil {
		t.Fatalf("Run: %v\nlogs:\n%s", err, logs)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(string(b)), "\n")
	want := []string{
		"CRONLOCK_ATTEMPT=2",
		"CRONLOCK_JOB=env.job",
		"CRONLOCK_OWNER=host:42",
		"CRONLOCK_TICK=2026-03-29T01:00:00Z", // RFC 3339 in UTC
		"CRONLOCK_TOKEN=1234",
		"GREETING=hi",
		dir,
	}
	if !slices.Equal(got, want) {
		t.Errorf("job saw\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if j.Name != cj.Name || j.Schedule != cj.Schedule || j.Location != time.UTC {
		t.Errorf("Job = %+v", j)
	}
}

func TestJobExitCode(t *testing.T) {
	t.Parallel()
	logs := &testlog.Buffer{}
	j := app.Job(config.Job{Name: "fails", Schedule: "@every 1m", Command: []string{"sh", "-c", "echo oops >&2; exit 3"}}, app.JobOptions{Lease: 20 * time.Second}, newLogger(t, logs))
	err := j.Run(job.NewContext(context.Background(), job.RunInfo{Job: "fails", Tick: time.Now(), Attempt: 1}))
	var ee *proc.ExitError
	if !errors.As(err, &ee) || ee.Code != 3 {
		t.Fatalf("Run = %v, want an exit error with code 3", err)
	}
	if !strings.Contains(err.Error(), "3") {
		t.Errorf("error %q does not name the exit code", err)
	}
	// The job's stderr is logged as a warning with the job's fields.
	if s := logs.String(); !strings.Contains(s, `"stream":"stderr"`) || !strings.Contains(s, `"message":"oops"`) || !strings.Contains(s, `"job":"fails"`) {
		t.Errorf("stderr not logged with the job's fields:\n%s", s)
	}
}

func TestNextRuns(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 3, 29, 0, 0, 0, 0, time.UTC)
	got, err := app.NextRuns(config.Job{Schedule: "30 2 * * *", Location: berlin}, from, 2)
	if err != nil {
		t.Fatal(err)
	}
	// 02:30 does not exist in Berlin that night: the tick is at the end of
	// the gap (job package rules), and the next one is the following day.
	want := []string{"2026-03-29T03:00:00+02:00", "2026-03-30T02:30:00+02:00"}
	for i, w := range want {
		if i >= len(got) || got[i].Format(time.RFC3339) != w {
			t.Fatalf("NextRuns = %v, want %v", got, want)
		}
	}
	none, err := app.NextRuns(config.Job{Schedule: "0 0 30 2 *", Location: time.UTC}, from, 3)
	if err != nil || len(none) != 0 {
		t.Errorf("NextRuns(Feb 30) = %v, %v; want none", none, err)
	}
}

// A command that ignores SIGTERM is killed within a twentieth of the lease
// when the lease is lost, not after its (long) grace: it must be gone
// before the server lets another replica take the lock. At shutdown it
// keeps its full grace.
func TestJobLeaseLossKillsBeforeTakeover(t *testing.T) {
	t.Parallel()
	cj := config.Job{Name: "stubborn", Schedule: "@every 1m", Shell: "trap '' TERM; echo trap installed; sleep 60 & wait; sleep 60",
		Grace: config.Duration(time.Minute), Location: time.UTC}
	logs := &testlog.Buffer{}
	j := app.Job(cj, app.JobOptions{Lease: 2 * time.Second}, newLogger(t, logs)) // lost-lease grace: 100 ms
	ctx, outcome := job.WithOutcome(job.NewContext(context.Background(), job.RunInfo{Job: cj.Name, Tick: time.Now(), Attempt: 1}))
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan error, 1)
	go func() { done <- j.Run(ctx) }()
	// The shell's output line, not its command line, says the trap is set.
	waitFor(t, 10*time.Second, "the shell's ready line", func() bool {
		return strings.Contains(logs.String(), `"message":"trap installed"`)
	})
	stopped := time.Now()
	cancel(lock.ErrLeaseLost)
	select {
	case err := <-done:
		var ee *proc.ExitError
		if !errors.As(err, &ee) || ee.Signal.String() != "killed" {
			t.Errorf("Run = %v, want killed by SIGKILL", err)
		}
		if took := time.Since(stopped); took > 5*time.Second {
			t.Errorf("killed %v after the lease was lost", took)
		}
		if code := outcome().ExitCode; code == nil || *code != 137 {
			t.Errorf("Outcome.ExitCode = %v, want 137 (128+SIGKILL)", code)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a command ignoring SIGTERM outlived its lost lease by 20 s (its grace is 1 min)")
	}
}

// Each run records its exit code and the tail of its combined output.
func TestJobOutcome(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		cj       config.Job
		tail     int
		wantCode *int // nil: none
		wantOut  string
	}{
		{"success", config.Job{Shell: "echo hello; echo world >&2"}, 100, ptr(0), "hello\nworld\n"},
		{"exit 3, tail cut", config.Job{Shell: "echo 0123456789 >&2; exit 3"}, 8, ptr(3), "3456789\n"},
		{"killed", config.Job{Shell: "echo bye; kill -KILL $$"}, 100, ptr(137), "bye\n"},
		{"tail off", config.Job{Shell: "echo hello"}, 0, ptr(0), ""},
		{"never started", config.Job{Command: []string{"/nonexistent/cronlock-test"}}, 100, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cj.Name, tc.cj.Schedule, tc.cj.Location = "outcome", "@every 1m", time.UTC
			logs := &testlog.Buffer{}
			j := app.Job(tc.cj, app.JobOptions{Lease: 20 * time.Second, OutputTail: tc.tail}, newLogger(t, logs))
			ctx, outcome := job.WithOutcome(job.NewContext(context.Background(), job.RunInfo{Job: "outcome", Tick: time.Now(), Attempt: 1}))
			err := j.Run(ctx)
			if (err == nil) != (tc.wantCode != nil && *tc.wantCode == 0) {
				t.Errorf("Run = %v", err)
			}
			o := outcome()
			switch {
			case tc.wantCode == nil && o.ExitCode != nil:
				t.Errorf("ExitCode = %d, want none", *o.ExitCode)
			case tc.wantCode != nil && (o.ExitCode == nil || *o.ExitCode != *tc.wantCode):
				t.Errorf("ExitCode = %v, want %d", o.ExitCode, *tc.wantCode)
			}
			// Both streams' lines are whole; their order is not defined.
			if !sameLines(o.Output, tc.wantOut) {
				t.Errorf("Output = %q, want the lines of %q", o.Output, tc.wantOut)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// sameLines reports whether a and b hold the same lines, in any order.
func sameLines(a, b string) bool {
	la, lb := strings.SplitAfter(a, "\n"), strings.SplitAfter(b, "\n")
	slices.Sort(la)
	slices.Sort(lb)
	return slices.Equal(la, lb)
}

// The run's lease deadline reaches the shim, which kills the command when
// it passes, although the run's context is never cancelled.
func TestJobLeaseDeadline(t *testing.T) {
	t.Parallel()
	cj := config.Job{Name: "deadline", Schedule: "@every 1m", Shell: "sleep 60", Grace: config.Duration(time.Minute), Location: time.UTC}
	j := app.Job(cj, app.JobOptions{Lease: 20 * time.Second}, newLogger(t, &testlog.Buffer{}))
	deadline := time.Now().Add(300 * time.Millisecond)
	ctx := job.WithLeaseDeadline(job.NewContext(context.Background(), job.RunInfo{Job: cj.Name, Tick: time.Now(), Attempt: 1}),
		func() (time.Time, <-chan struct{}) { return deadline, nil })
	ctx, outcome := job.WithOutcome(ctx)
	err := j.Run(ctx)
	if !errors.Is(err, proc.ErrLeaseDeadline) {
		t.Fatalf("Run = %v, want proc.ErrLeaseDeadline", err)
	}
	if late := time.Since(deadline); late < 0 || late > 5*time.Second {
		t.Errorf("Run returned %v after the deadline", late)
	}
	if code := outcome().ExitCode; code == nil || *code != 137 {
		t.Errorf("Outcome.ExitCode = %v, want 137", code)
	}
}
