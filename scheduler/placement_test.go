package scheduler_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/scheduler"
)

// Three replicas, two labelled role: batch and one role: web, one NATS
// server for three checks: a job with on_replicas {role: web} runs only on
// the web replica; one with {role: gpu} runs nowhere and its ticks are
// missed with reason no_replica; an every_replica job runs each tick once
// on each replica, and the merged history shows one entry per replica.
func TestPlacement(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	web, gpu, every := newRecorder(), newRecorder(), newRecorder()
	labels := map[string]map[string]string{"p1": {"role": "batch"}, "p2": {"role": "web", "zone": "eu-1"}, "p3": {"role": "batch"}}
	var reps []*replica
	for _, id := range []string{"p1", "p2", "p3"} {
		r := newReplica(t, url, lockOpts(id), scheduler.Options{Logger: testLogger(t, id), ReplicaLabels: labels[id]})
		addJob(t, r, job.Job{Name: "web-only", Schedule: "* * * * * *", OnReplicas: map[string]string{"role": "web"}, Run: startRecorder(id, web, 0)})
		addJob(t, r, job.Job{Name: "gpu-only", Schedule: "* * * * * *", OnReplicas: map[string]string{"role": "gpu"}, Run: startRecorder(id, gpu, 0)})
		addJob(t, r, job.Job{Name: "local", Schedule: "* * * * * *", RunOn: job.RunOnEveryReplica, Run: startRecorder(id, every, 0)})
		addJob(t, r, job.Job{Name: "gpu-local", Schedule: "* * * * * *", RunOn: job.RunOnEveryReplica,
			OnReplicas: map[string]string{"role": "gpu"}, Run: startRecorder(id, gpu, 0)})
		reps = append(reps, r)
		r.start(t)
	}
	if _, err := reps[0].s.Trigger(context.Background(), "web-only"); !errors.Is(err, scheduler.ErrNotPlaced) {
		t.Errorf("Trigger of web-only on p1 (role: batch): %v, want ErrNotPlaced", err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for len(every.all()) < 9 && time.Now().Before(deadline) {
		every.next(t, 10*time.Second)
	}
	time.Sleep(1500 * time.Millisecond) // a no_replica tick is recorded noReplicaWait after it
	for _, r := range reps {
		r.stop()
	}
	for _, x := range web.all() {
		if x.replica != "p2" {
			t.Errorf("web-only ran on %s: want only p2 (role: web)", x.replica)
		}
	}
	if len(web.all()) < 3 {
		t.Errorf("web-only ran %d times, want every second on p2", len(web.all()))
	}
	if n := len(gpu.all()); n != 0 {
		t.Errorf("gpu-only ran %d times with no matching replica", n)
	}
	for _, name := range []string{"gpu-only", "gpu-local"} { // an every_replica job's in its own record
		all := runsOf(t, reps[0], name)
		missed := withStatus(all, scheduler.StatusMissed)
		if len(missed) < 2 || len(missed) != len(all) {
			t.Errorf("%s's history %+v: want its ticks missed", name, all)
		}
		ticks := map[time.Time]bool{}
		for _, m := range missed {
			if m.Reason != scheduler.ReasonNoReplica || ticks[m.Tick] {
				t.Errorf("%s missed %+v: want reason no_replica, once a tick", name, m)
			}
			ticks[m.Tick] = true
		}
	}
	if rr, err := reps[0].s.ReplicaRuns(context.Background(), "gpu-local"); err != nil || len(rr) != 0 {
		t.Errorf("gpu-local's replica records: %+v, %v; want none", rr, err)
	}
	checkEveryReplica(t, reps[0], every, 3)
}

// checkEveryReplica checks that each tick ran at most once per replica and
// the ticks that ran everywhere ran on n replicas, both in the runs made
// and in the merged history.
func checkEveryReplica(t *testing.T, r *replica, runs *recorder, n int) {
	t.Helper()
	per := map[time.Time]map[string]int{}
	for _, x := range runs.all() {
		if per[x.tick] == nil {
			per[x.tick] = map[string]int{}
		}
		per[x.tick][x.replica]++
	}
	full := 0
	for tick, by := range per {
		for rep, c := range by {
			if c != 1 {
				t.Errorf("tick %v ran %d times on %s, want once", tick, c, rep)
			}
		}
		if len(by) == n {
			full++
		}
	}
	if full < 2 {
		t.Errorf("runs by tick %v: want ticks that ran on each of %d replicas", per, n)
	}
	h, err := r.s.ReplicaRuns(context.Background(), "local")
	if err != nil {
		t.Fatal(err)
	}
	owners := map[time.Time]map[string]bool{}
	for _, run := range h {
		if name, ok := scheduler.RecordJob(run.Job); name != "local" || !ok {
			t.Errorf("merged entry %+v: Job %q, want a record of local", run, run.Job)
		}
		if run.Status != scheduler.StatusSucceeded {
			continue
		}
		if owners[run.Tick] == nil {
			owners[run.Tick] = map[string]bool{}
		}
		if owners[run.Tick][run.Owner] {
			t.Errorf("tick %v: two entries of owner %s", run.Tick, run.Owner)
		}
		owners[run.Tick][run.Owner] = true
	}
	shown := 0
	for _, o := range owners {
		if len(o) == n {
			shown++
		}
	}
	if shown < 2 {
		t.Errorf("merged history %+v: want ticks with an entry per replica", h)
	}
}

// An every_replica job's run on a replica that is cut off from NATS for
// good (as if killed) is in that replica's own record, which no other
// replica schedules: a survivor that has the job still records it
// abandoned once the replica is gone.
func TestEveryReplicaAbandonedSwept(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	proxy := natstest.NewProxy(t, strings.TrimPrefix(url, "nats://"))
	started := make(chan string, 10)
	j := job.Job{Name: "host.local", Schedule: "* * * * * *", RunOn: job.RunOnEveryReplica, Run: func(ctx context.Context) error {
		info, _ := job.FromContext(ctx)
		started <- info.Owner
		<-ctx.Done()
		return ctx.Err()
	}}
	doomed := newReplica(t, proxy.URL(), lockOpts("doomed"), scheduler.Options{Logger: testLogger(t, "doomed")})
	survivor := newReplica(t, url, lockOpts("survivor"), scheduler.Options{Logger: testLogger(t, "survivor")})
	for _, r := range []*replica{doomed, survivor} {
		addJob(t, r, j)
		r.start(t)
	}
	t.Cleanup(proxy.Thaw)
	for got := map[string]bool{}; len(got) < 2; {
		select {
		case o := <-started:
			got[o] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("runs started on %v, want both replicas", got)
		}
	}
	proxy.Freeze()
	proxy.Cut()
	waitFor(t, time.Second+scheduler.ReplicaTTL+8*time.Second, "the doomed replica's run recorded abandoned", func() bool {
		runs, err := survivor.s.ReplicaRuns(context.Background(), "host.local")
		if err != nil {
			return false
		}
		for _, r := range runs {
			if r.Owner == "doomed" && r.Status == scheduler.StatusAbandoned {
				return true
			}
		}
		return false
	})
}

// An every_replica record's key names its job and replica, is a valid
// record (its lock's key) and never a job's name.
func TestReplicaRecordKey(t *testing.T) {
	t.Parallel()
	key := scheduler.ReplicaRecord("backup.logs", "host-1:4242")
	if name, ok := scheduler.RecordJob(key); name != "backup.logs" || !ok {
		t.Errorf("RecordJob(%q) = %q, %v", key, name, ok)
	}
	if err := scheduler.ValidateRecord(key); err != nil {
		t.Errorf("ValidateRecord(%q): %v", key, err)
	}
	if job.ValidateName(key) == nil {
		t.Errorf("%q is a valid job name: it could collide with a job's record", key)
	}
	if name, ok := scheduler.RecordJob("backup.logs"); name != "backup.logs" || ok {
		t.Errorf("RecordJob of a job's name = %q, %v", name, ok)
	}
	for _, bad := range []string{"a.=.", "a.=.b.c", "a.=.b c", ".=.b", "a b"} {
		if scheduler.ValidateRecord(bad) == nil {
			t.Errorf("ValidateRecord(%q) = nil, want an error", bad)
		}
	}
}
