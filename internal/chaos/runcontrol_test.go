package chaos

import (
	"testing"
	"time"
)

// groupHistory is a clean history plus a group "g" (max_running 2) of
// three jobs due every 5 s at 5 s and 10 s: two run at once, the third
// after the first ends.
func groupHistory() *History {
	h := clean()
	h.Groups = map[string]int{"g": 2}
	h.Policies = map[string]Policy{}
	for _, j := range []string{"g1", "g2", "g3"} {
		h.Policies[j] = Policy{Every: 5 * time.Second, Group: "g"}
	}
	for i, tick := range []float64{5, 10} {
		pid := 400 + 10*i
		h.Runs = append(h.Runs,
			run("g1", tick, tick+0.01, tick+1.0, "r1", pid, uint64(1+i), "ok"),
			run("g2", tick, tick+0.02, tick+1.1, "r2", pid+1, uint64(1+i), "ok"),
			run("g3", tick, tick+1.0, tick+2.0, "r3", pid+2, uint64(1+i), "ok"))
	}
	h.To = at(16)
	return h
}

func TestCheckGroupWithinMaxRunning(t *testing.T) {
	r := Check(groupHistory())
	if !r.OK() {
		t.Fatalf("violations: %v", r.Violations)
	}
	g := r.RunControl.Groups[0]
	if g.MaxObserved != 2 || g.Runs != 6 || g.Excused != 0 {
		t.Fatalf("group report %+v, want 2 at once of 6 runs", g)
	}
	// Ticks at 5 and 10 s are in [From, To-deadline-1s] = [1, 11]; all ran.
	if g.Ticks != 2 || g.AllRan != 2 {
		t.Fatalf("group ticks %d all ran %d, want 2 and 2", g.Ticks, g.AllRan)
	}
}

func TestCheckGroupAboveMaxRunningIsViolation(t *testing.T) {
	h := groupHistory()
	// g3 starts 10 ms before g1's end line: three at once.
	h.Runs[len(h.Runs)-1].Start = at(10.99)
	r := wantViolation(t, h, "group g (max_running 2) ran 3 at once")
	if r.RunControl.Groups[0].MaxObserved != 3 {
		t.Fatalf("max observed %d, want 3", r.RunControl.Groups[0].MaxObserved)
	}
}

func TestCheckGroupKilledRunEndsAtTheKill(t *testing.T) {
	h := groupHistory()
	// g1's run at 10 s has no end line: its replica was killed at 10.5 s,
	// so g3 starting at 11 s is the second at once, not the third.
	for i := range h.Runs {
		if h.Runs[i].Job == "g1" && h.Runs[i].Tick.Equal(at(10)) {
			h.Runs[i].End, h.Runs[i].Status = time.Time{}, ""
		}
	}
	h.Faults = []Fault{{Seq: 1, Kind: FKill, Target: "r1", Start: at(10.5), End: at(12)}}
	if r := Check(h); !r.OK() {
		t.Fatalf("violations: %v", r.Violations)
	}
}

func TestCheckGroupFrozenHostIsExcused(t *testing.T) {
	h := groupHistory()
	// r1's whole host is frozen from 10.5 s to 12.5 s while its run of g1
	// (ending at 12.6 s, once resumed) holds on; g3 takes the freed slot.
	for i := range h.Runs {
		if h.Runs[i].Job == "g1" && h.Runs[i].Tick.Equal(at(10)) {
			h.Runs[i].End = at(12.6)
		}
	}
	h.Faults = []Fault{{Seq: 1, Kind: FPauseTree, Target: "r1", Start: at(10.5), End: at(12.5)}}
	r := Check(h)
	if !r.OK() {
		t.Fatalf("violations: %v", r.Violations)
	}
	if g := r.RunControl.Groups[0]; g.Excused != 1 || g.MaxObserved != 2 {
		t.Fatalf("group report %+v, want one excused moment", g)
	}
	// A pause of cronlock alone is no excuse.
	h.Faults[0].Kind = FPause
	wantViolation(t, h, "ran 3 at once")
}

// followOnHistory: six runs of job "q" under policy, on r1–r3 in turn,
// each followed 30 ms after its end line by the run of the tick that came
// during it. queue: every 2 s, runs of 2.5 s (the ticks 2, 4, 6, 8, 12,
// 14: two ticks came during the run of 8, 10 is missed). replace: every
// second, each run stopped 20 ms after the next tick. To is half a second
// after the last run's end: it is too late to be checked.
func followOnHistory(policy string) *History {
	every := 2 * time.Second
	if policy == "replace" {
		every = time.Second
	}
	h := &History{Lease: 2 * time.Second, From: at(1), Policies: map[string]Policy{"q": {Overlap: policy, Every: every}}}
	tick, start := 2.0, 2.01
	for i := range 6 {
		end, status, next := start+2.5, "ok", 0.0
		if policy == "replace" {
			end, status, next = tick+1.02, "signal", tick+1
		} else {
			next = float64(int(end) / 2 * 2)
		}
		h.Runs = append(h.Runs, run("q", tick, start, end, "r"+string(rune('1'+i%3)), 500+i, uint64(1+i), status))
		tick, start = next, end+0.03
	}
	h.To = h.Runs[len(h.Runs)-1].End.Add(500 * time.Millisecond)
	h.Samples = healthy(0, h.To.Sub(t0).Seconds()+2)
	return h
}

func TestCheckQueueFollowedByQueuedTick(t *testing.T) {
	for _, policy := range []string{"queue", "replace"} {
		t.Run(policy, func(t *testing.T) {
			r := Check(followOnHistory(policy))
			if !r.OK() {
				t.Fatalf("violations: %v", r.Violations)
			}
			// The first five are checked; the last ends too close to To.
			f := r.RunControl.FollowOns[0]
			if f.Checked != 5 || f.Queued != 5 || f.Later != 0 || f.NearFault != 0 || len(f.Latency) != 5 {
				t.Fatalf("follow-on report %+v", f)
			}
		})
	}
}

func TestCheckQueueSkippedTickIsViolation(t *testing.T) {
	// The job behaves as under skip: after each run the next tick runs,
	// 1.6 s after the end line, not the tick that came during the run.
	h := followOnHistory("queue")
	tick := 2.0
	for i := range h.Runs {
		h.Runs[i].Tick, h.Runs[i].Start, h.Runs[i].End = at(tick), at(tick+0.01), at(tick+2.41)
		tick += 4
	}
	h.To = h.Runs[len(h.Runs)-1].End.Add(500 * time.Millisecond)
	h.Samples = healthy(0, h.To.Sub(t0).Seconds()+2)
	r := wantViolation(t, h, "queue: tick 12:00:04 came during run of q tick 12:00:02")
	if n := len(r.Violations); n != 5 {
		t.Fatalf("%d violations, want one per checked run (5): %v", n, r.Violations)
	}
}

func TestCheckQueueLostTickIsViolation(t *testing.T) {
	h := followOnHistory("queue")
	// Tick 6 came during the second run (4.54–7.04 s) but tick 8 runs at
	// 8.01 s: 0.97 s after the end line, soon enough, but tick 6 was lost.
	h.Runs[2].Tick, h.Runs[2].Start = at(8), at(8.01)
	h.Runs = append(h.Runs[:3], h.Runs[4:]...) // the run of tick 8 at 9.6 s
	wantViolation(t, h, "queue: tick 12:00:06 came during run of q tick 12:00:04 on r2 (pid 501, 12:00:04.540–12:00:07.040, ok) but did not run: the next run is of tick 12:00:08, 960ms after its end line")
}

func TestCheckQueueTickJustAfterTheEndCounts(t *testing.T) {
	h := followOnHistory("queue")
	// The second run's end line is at 7.7 s; tick 8, 0.3 s later (before
	// cronlock recorded the result), replaces the queued 6 and runs.
	h.Runs[1].End = at(7.7)
	h.Runs[2].Tick, h.Runs[2].Start = at(8), at(8.05)
	h.Runs = append(h.Runs[:3], h.Runs[4:]...) // the run of tick 8 at 9.6 s
	r := Check(h)
	if !r.OK() {
		t.Fatalf("violations: %v", r.Violations)
	}
	if f := r.RunControl.FollowOns[0]; f.Later != 1 {
		t.Fatalf("follow-on report %+v, want one run followed by a later tick", f)
	}
}

func TestCheckQueueOlderTickIsViolation(t *testing.T) {
	h := followOnHistory("queue")
	// Ticks 10 and 12 came during the fourth run (9.60–12.10 s); the older
	// one ran after it.
	h.Runs[4].Tick = at(10)
	wantViolation(t, h, "an older tick 12:00:10 ran instead of the latest, 12:00:12")
}

func TestCheckReplaceNotStoppedIsViolation(t *testing.T) {
	h := followOnHistory("replace")
	// The second run ran out its hold although tick 4 came during it.
	h.Runs[1].Status = "ok"
	wantViolation(t, h, "was not stopped by its next tick")
}

func TestCheckFollowOnNearFaultIsNotChecked(t *testing.T) {
	h := followOnHistory("queue")
	// After the second run (4.54–7.04 s, on r2) the queued tick 6 runs
	// only at 8.6 s: a violation, unless r2 was cut from 6 s to 7.5 s, so
	// that the hand-over may wait.
	h.Runs[2].Start = at(8.6)
	wantViolation(t, h, "did not run within")
	h.Faults = []Fault{{Seq: 1, Kind: FCut, Target: h.Runs[1].Replica, Start: at(6), End: at(7.5)}}
	r := Check(h)
	if !r.OK() {
		t.Fatalf("violations near a fault: %v", r.Violations)
	}
	if f := r.RunControl.FollowOns[0]; f.NearFault == 0 {
		t.Fatalf("follow-on report %+v: want runs not checked near the fault", f)
	}
	// A fault of another replica that ends long before the hand-over is
	// no excuse.
	h.Faults[0].Target, h.Faults[0].Start, h.Faults[0].End = "r5", at(3), at(4)
	wantViolation(t, h, "did not run within")
}

func TestHoldFor(t *testing.T) {
	a := holdFor("q", "2026-11-29T12:00:02Z", 2500*time.Millisecond, 3500*time.Millisecond)
	if a < 2500*time.Millisecond || a > 3500*time.Millisecond {
		t.Fatalf("hold %v outside [2.5s, 3.5s]", a)
	}
	if b := holdFor("q", "2026-11-29T12:00:02Z", 2500*time.Millisecond, 3500*time.Millisecond); b != a {
		t.Fatalf("hold not a function of job and tick: %v then %v", a, b)
	}
	if c := holdFor("q", "x", time.Second, 0); c != time.Second {
		t.Fatalf("hold without a max: %v", c)
	}
}

// A replaced run's follow-on claimed (token 3) but stopped before its
// recorder wrote its start line, because a newer tick came first: the next
// recorded run (token 4) is of a later tick and starts late, which is no
// violation, since the skipped token shows the claim in between. With the
// tokens following on it is one (as under skip).
func TestCheckReplaceFollowOnStoppedBeforeItRecorded(t *testing.T) {
	h := followOnHistory("replace")
	h.Runs = append(h.Runs[:2], h.Runs[3:]...) // token 3's run left no record
	r := Check(h)
	if !r.OK() {
		t.Fatalf("violations: %v", r.Violations)
	}
	if f := r.RunControl.FollowOns[0]; f.Unrecorded != 1 {
		t.Fatalf("follow-on report %+v: want 1 claim stopped before it recorded", f)
	}
	for i := 2; i < len(h.Runs); i++ {
		h.Runs[i].Token--
	}
	wantViolation(t, h, "(as under skip)")
}
