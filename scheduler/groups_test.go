package scheduler_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/scheduler"
)

// Five jobs of a group with max_running 2, due at once on three replicas:
// never more than two run at once, and all five run that tick (they wait
// for a slot within their starting deadline). A sixth job of the group,
// every second and without a starting deadline, is missed with reason
// group_full while the group is full.
func TestGroupLimitsRunsAcrossReplicas(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	var mu sync.Mutex
	running, most := 0, 0
	ran := map[string]map[time.Time]bool{}
	work := func(ctx context.Context) error {
		info, _ := job.FromContext(ctx)
		mu.Lock()
		running++
		most = max(most, running)
		if ran[info.Job] == nil {
			ran[info.Job] = map[time.Time]bool{}
		}
		ran[info.Job][info.Tick] = true
		mu.Unlock()
		defer func() {
			mu.Lock()
			running--
			mu.Unlock()
		}()
		select {
		case <-time.After(1500 * time.Millisecond):
		case <-ctx.Done():
		}
		return ctx.Err()
	}
	g := job.Group{Name: "backups", MaxRunning: 2}
	var reps []*replica
	for _, id := range []string{"r1", "r2", "r3"} {
		r := newReplica(t, url, lockOpts(id), scheduler.Options{Logger: testLogger(t, id)})
		for i := range 5 {
			addJob(t, r, job.Job{Name: fmt.Sprintf("backup.%d", i), Schedule: "*/10 * * * * *", Group: g,
				StartingDeadline: 8 * time.Second, Run: work})
		}
		// Every second: while the backups fill both slots or wait in
		// line, it finds the group full and does not wait.
		addJob(t, r, job.Job{Name: "eager", Schedule: "* * * * * *", Group: g, Run: work})
		reps = append(reps, r)
		r.start(t)
	}
	done := func() bool {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for i := range 5 {
			if len(ran[fmt.Sprintf("backup.%d", i)]) > 0 {
				n++
			}
		}
		return n == 5
	}
	waitFor(t, 25*time.Second, "all five jobs of the group ran", done)
	waitFor(t, 15*time.Second, "eager missed with group_full", func() bool {
		for _, r := range withStatus(runsOf(t, reps[0], "eager"), scheduler.StatusMissed) {
			if r.Reason == scheduler.ReasonGroupFull {
				return true
			}
		}
		return false
	})
	for _, r := range reps {
		r.stop()
	}
	mu.Lock()
	defer mu.Unlock()
	if most > 2 {
		t.Errorf("%d runs of the group at once, want at most 2", most)
	}
	if most < 2 {
		t.Errorf("at most %d run of the group at once: the two slots were not used", most)
	}
}
