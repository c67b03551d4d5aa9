package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/scheduler"
)

// A run's exit code is in the history and its output under a key of its
// own: History.Runs leaves Output empty, History.Output returns it, the
// job's state key never holds it, and it is dropped once HistorySize+2
// newer runs kept theirs.
func TestRunOutputKeptApart(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	ctx := context.Background()
	const name, size = "talky", 3
	starts := newRecorder()
	r := newReplica(t, url, lockOpts("me"), scheduler.Options{HistorySize: size, Logger: testLogger(t, "me")})
	addJob(t, r, job.Job{Name: name, Schedule: "* * * * * *", Run: func(ctx context.Context) error {
		info, _ := job.FromContext(ctx)
		starts.add(rec{tick: info.Tick})
		code := 3
		job.SetOutcome(ctx, job.Outcome{ExitCode: &code, Output: fmt.Sprintf("output of tick %d", info.Tick.Unix())})
		return errors.New("exit status 3")
	}})
	r.start(t)

	var first scheduler.Run
	waitFor(t, 10*time.Second, "a finished run", func() bool {
		h := runsOf(t, r, name)
		if len(h) == 0 || !h[len(h)-1].Finished() {
			return false
		}
		first = h[len(h)-1]
		return true
	})
	want := fmt.Sprintf("output of tick %d", first.Tick.Unix())
	if first.Status != scheduler.StatusFailed || first.ExitCode == nil || *first.ExitCode != 3 || first.Output != "" {
		t.Errorf("History.Runs entry %+v, want failed with exit code 3 and no output", first)
	}
	h, err := scheduler.OpenHistory(ctx, r.js, scheduler.HistoryOptions{Size: size})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := h.Output(ctx, first); err != nil || got != want {
		t.Errorf("Output = %q, %v; want %q", got, err, want)
	}
	bucket, err := r.js.KeyValue(ctx, scheduler.DefaultHistoryBucket)
	if err != nil {
		t.Fatal(err)
	}
	state, err := bucket.Get(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(state.Value()), "output of tick") {
		t.Errorf("the job's state key holds run output: %s", state.Value())
	}

	waitFor(t, 15*time.Second, fmt.Sprintf("%d more runs", size+2), func() bool {
		n := 0
		for _, x := range starts.all() {
			if x.tick.After(first.Tick) {
				n++
			}
		}
		return n >= size+3 // the last may still be running
	})
	if got, err := h.Output(ctx, first); err != nil || got != "" {
		t.Errorf("Output of a run %d runs old = %q, %v; want it gone", size+2, got, err)
	}
	latest := withStatus(runsOf(t, r, name), scheduler.StatusFailed)[0]
	if got, _ := h.Output(ctx, latest); got != fmt.Sprintf("output of tick %d", latest.Tick.Unix()) {
		t.Errorf("Output of the latest run = %q", got)
	}
}
