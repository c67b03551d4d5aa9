package main

import (
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/scheduler"
)

// TestKilledRunAbandonedWithinLease: of three replicas of a daily job, the
// one running a 60 s manual run is SIGKILLed. Within its 2 s lease plus
// ReplicaTTL plus a few seconds (not at the next day's tick), the history
// shows the run abandoned and exactly one failure notification goes out.
func TestKilledRunAbandonedWithinLease(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	dir := t.TempDir()
	ds := map[string]*daemon{}
	for _, owner := range []string{"r1", "r2", "r3"} {
		ds[owner] = startDaemon(t, dir, trustConfig(t, dir, url, owner, "2s", "0 0 3 * * *", "failure", 60))
	}
	for _, d := range ds {
		running(d)
	}
	writeFile(t, dir, "slow", "")
	triggerAPI(t, httpBase(t, ds["r1"]), "trust.job")
	tick, owner := slowRun(t, dir)
	ds[owner].kill()
	killed := time.Now()

	const lease = 2 * time.Second
	var run scheduler.Run
	waitFor(t, lease+scheduler.ReplicaTTL+5*time.Second, "the killed run recorded abandoned", func() bool {
		for _, r := range historyOf(t, url, "trust.job") {
			if r.Manual && r.Tick.Truncate(time.Second).Equal(tick) { // CRONLOCK_TICK is in whole seconds
				run = r
				return r.Status == scheduler.StatusAbandoned
			}
		}
		return false
	})
	t.Logf("the killed run recorded abandoned %v after the SIGKILL", time.Since(killed).Round(10*time.Millisecond))
	waitFor(t, 5*time.Second, "the failure notification", func() bool { return len(notes(t, dir)) > 0 })
	time.Sleep(time.Second) // a second notification, from a racing replica, would come within this
	got := notes(t, dir)
	if len(got) != 1 {
		t.Fatalf("notifications %v, want exactly one", got)
	}
	n := got[0]
	if n["event"] != "failure" || n["status"] != string(scheduler.StatusAbandoned) || n["owner"] != owner || n["token"] != float64(run.Token) {
		t.Errorf("notification %v: want event failure, status abandoned, owner %s, token %d", n, owner, run.Token)
	}
}
