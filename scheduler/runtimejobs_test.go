package scheduler_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/scheduler"
)

// Jobs added while Run starts (as a runtime jobs' follow does) each run
// once per tick: each entry's loop is started once, by Add or by Run, never
// by both (which gave one entry two goroutines, a data race under -race and
// a tick tried twice).
func TestAddWhileRunStarts(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	r := newReplica(t, url, lockOpts("a"), scheduler.Options{Logger: testLogger(t, "a")})
	var mu sync.Mutex
	runs := map[string]int{}     // job and tick -> runs
	jobsRan := map[string]bool{} // jobs that ran at least once
	add := func(i int) {
		name := fmt.Sprintf("added.%d", i)
		err := r.s.Add(job.Job{Name: name, Schedule: "* * * * * *", Run: func(ctx context.Context) error {
			info, _ := job.FromContext(ctx)
			mu.Lock()
			runs[name+" "+info.Tick.String()]++
			jobsRan[name] = true
			mu.Unlock()
			return nil
		}})
		if err != nil {
			t.Error(err)
		}
	}
	r.start(t)
	for i := range 50 { // while Run waits for its first clock sample, then starts the jobs it has
		add(i)
	}
	waitFor(t, 20*time.Second, "each of the 50 jobs to run", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(jobsRan) == 50
	})
	time.Sleep(time.Second) // a second loop would try the next tick too
	r.stop()
	mu.Lock()
	defer mu.Unlock()
	for k, n := range runs {
		if n > 1 {
			t.Errorf("%s ran %d times", k, n)
		}
	}
}

// Runtime jobs in Go: a put is scheduled with its kind's function and its
// payload in the run's context; a definition of an unknown kind is not; a
// delete stops it; IfMatch refuses a stale revision.
func TestFollowRuntimeJobs(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	r := newReplica(t, url, lockOpts("a"), scheduler.Options{Logger: testLogger(t, "a")})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	jobs, err := scheduler.OpenRuntimeJobs(ctx, r.js, scheduler.RuntimeJobsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ran atomic.Int64
	payloads := make(chan string, 100)
	if err := r.s.FollowRuntimeJobs(ctx, jobs, scheduler.Kinds{"k": func(ctx context.Context) error {
		ran.Add(1)
		payloads <- string(job.Payload(ctx))
		return nil
	}}); err != nil {
		t.Fatal(err)
	}
	r.start(t)
	if _, err := jobs.Put(ctx, scheduler.RuntimeJob{Name: "other", Schedule: "* * * * * *", Kind: "unknown"}); err != nil {
		t.Fatal(err)
	}
	rev, err := jobs.Put(ctx, scheduler.RuntimeJob{Name: "rt", Schedule: "* * * * * *", Kind: "k", Payload: json.RawMessage(`{"n":1}`)}, scheduler.By("test"))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-payloads:
		if p != `{"n":1}` {
			t.Errorf("payload %s", p)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the runtime job did not run")
	}
	if got, err := jobs.Get(ctx, "rt"); err != nil || got.By != "test" || got.Revision != rev {
		t.Errorf("Get = %+v, %v", got, err)
	}
	if list, next, err := jobs.List(ctx, "", 1); err != nil || len(list) != 1 || list[0].Name != "other" || next != "other" {
		t.Errorf("List page = %v, %q, %v", list, next, err)
	}
	if _, err := jobs.Delete(ctx, "rt", scheduler.IfMatch(rev+100)); !errors.Is(err, scheduler.ErrRevisionMismatch) {
		t.Errorf("Delete with a stale revision = %v", err)
	}
	if _, err := jobs.Delete(ctx, "rt", scheduler.IfMatch(rev)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // a run started before the delete ends
	n := ran.Load()
	time.Sleep(2 * time.Second)
	if ran.Load() != n {
		t.Errorf("the deleted runtime job went on running")
	}
	for _, s := range r.s.Jobs() {
		if s.Name == "other" {
			t.Errorf("a definition of an unknown kind was scheduled")
		}
	}

	// The calendar keys: today excluded, the next tick is tomorrow's first.
	today := time.Now().UTC()
	if _, err := jobs.Put(ctx, scheduler.RuntimeJob{Name: "cal", Schedule: "* * * * * *", Kind: "k",
		ExcludeDates: []string{today.Format(time.DateOnly)}}); err != nil {
		t.Fatal(err)
	}
	tomorrow := time.Date(today.Year(), today.Month(), today.Day()+1, 0, 0, 0, 0, time.UTC)
	waitFor(t, 10*time.Second, "the calendar job scheduled for tomorrow", func() bool {
		st, ok := r.s.Job("cal")
		return ok && st.Next.Equal(tomorrow)
	})
	if _, err := jobs.Put(ctx, scheduler.RuntimeJob{Name: "bad", Schedule: "@daily", Kind: "k", ExcludeDates: []string{"2026-02-30"}}); err == nil {
		t.Error("Put of an impossible exclude date succeeded")
	}
}
