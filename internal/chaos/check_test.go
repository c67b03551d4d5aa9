package chaos

import (
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

func run(job string, tick, start, end float64, replica string, pid int, token uint64, status string) Record {
	r := Record{Job: job, Tick: at(tick), Start: at(start), Replica: replica, PID: pid, Token: token, Attempt: 1, Status: status}
	if end >= 0 {
		r.End = at(end)
	}
	return r
}

// healthy returns monitor samples showing a healthy cluster over [a, b].
func healthy(a, b float64) []Sample {
	var s []Sample
	for x := a; x <= b; x += 0.25 {
		s = append(s, Sample{Time: at(x), NodesUp: 3, LockLeader: "n1", HistoryLeader: "n2"})
	}
	return s
}

// clean is a history of 10 s in which every tick of "t" ran once and a long
// job ran back to back.
func clean() *History {
	h := &History{Lease: 2 * time.Second, ShortJobs: []string{"t"}, LongJobs: []string{"l"}, From: at(1), To: at(10), Samples: healthy(0, 12)}
	tok := uint64(1)
	for i := 1; i <= 10; i++ {
		h.Runs = append(h.Runs, run("t", float64(i), float64(i)+0.01, float64(i)+0.02, "r1", 100+i, tok, "ok"))
		tok++
	}
	h.Runs = append(h.Runs, run("l", 1, 1.01, 6.0, "r2", 200, tok, "ok"))
	h.Runs = append(h.Runs, run("l", 6, 6.01, 11.0, "r3", 201, tok+1, "ok"))
	h.Shutdown = &ShutdownState{ExitCodes: map[string]int{"r1": 0, "r2": 0}}
	return h
}

func TestCheckClean(t *testing.T) {
	h := clean()
	r := Check(h)
	if !r.OK() {
		t.Fatalf("violations on a clean history: %v", r.Violations)
	}
	if r.Expected != 10 || r.Ran != 10 || r.Eligible != 10 || len(r.Misses) != 0 {
		t.Fatalf("coverage: %+v", r)
	}
}

func wantViolation(t *testing.T, h *History, substr string) *Report {
	t.Helper()
	r := Check(h)
	if r.OK() {
		t.Fatalf("no violation, want one containing %q", substr)
	}
	for _, v := range r.Violations {
		if strings.Contains(v, substr) {
			return r
		}
	}
	t.Fatalf("violations %q do not contain %q", r.Violations, substr)
	return r
}

func TestCheckOverlapIsViolation(t *testing.T) {
	h := clean()
	// A second holder of "l" starts while r2's run is still going, and no
	// fence rejection: a violation.
	h.Runs = append(h.Runs, run("l", 3, 3.0, 4.0, "r4", 300, 99, "ok"))
	r := wantViolation(t, h, "overlap")
	if len(r.Overlaps) != 1 || r.FencedOverlaps != 0 {
		t.Fatalf("overlaps %d fenced %d", len(r.Overlaps), r.FencedOverlaps)
	}
}

func TestCheckFencedOverlapIsCounted(t *testing.T) {
	h := clean()
	// r2's host was frozen past its lease; r4 took over with a higher
	// token and r2's next write was rejected.
	h.Runs[10].End, h.Runs[10].Status = at(7.5), "fenced"
	h.Runs[11] = run("l", 6, 6.5, 11, "r4", 300, 500, "ok")
	h.Fence = []FenceDecision{{Time: at(7.5), Job: "l", Token: h.Runs[10].Token, PID: 200, OK: false, Max: 500}}
	// Without a pause of r2, two live holders at once: a violation even
	// though the fence caught it.
	wantViolation(t, h, "overlap")
	// A pause of cronlock alone is no excuse either: its shim must have
	// killed the job at the lease's local safe deadline.
	h.Faults = []Fault{{Kind: FPause, Target: "r2", Start: at(4), End: at(7.4)}}
	wantViolation(t, h, "frozen-host=false")
	// A frozen host (pause-tree) is the case fencing exists for.
	h.Faults[0].Kind = FPauseTree
	r := Check(h)
	if !r.OK() {
		t.Fatalf("violations: %v", r.Violations)
	}
	if len(r.Overlaps) != 1 || r.FencedOverlaps != 1 || r.Rejections != 1 || r.FencedRuns != 1 {
		t.Fatalf("overlaps %d fenced %d rejections %d", len(r.Overlaps), r.FencedOverlaps, r.Rejections)
	}
}

func TestCheckDuplicateTick(t *testing.T) {
	h := clean()
	h.Runs = append(h.Runs, run("t", 5, 5.5, 5.6, "r2", 999, 1000, "ok"))
	wantViolation(t, h, "ran 2 times")
}

func TestCheckKilledRun(t *testing.T) {
	h := clean()
	// A run without an end: fine if its replica was killed (it ended then)...
	h.Runs[11] = run("l", 6, 6.01, -1, "r3", 201, 50, "")
	h.Faults = []Fault{{Kind: FKill, Target: "r3", Start: at(8), End: at(9)}}
	h.Runs = append(h.Runs, run("l", 10, 10.2, 11, "r1", 202, 51, "ok"))
	if r := Check(h); !r.OK() || r.Killed != 1 {
		t.Fatalf("killed run: %v (killed %d)", r.Violations, r.Killed)
	}
	// ... and overlapping if the next holder started before the kill.
	h.Runs[len(h.Runs)-1] = run("l", 7, 7.5, 11, "r1", 202, 51, "ok")
	wantViolation(t, h, "overlap")
	// Without a kill, a run that never ended is a violation by itself.
	h.Faults = nil
	h.Runs = h.Runs[:len(h.Runs)-1]
	wantViolation(t, h, "never ended")
}

func TestCheckOrphan(t *testing.T) {
	h := clean()
	// r2's job kept running 3 s after r2 was SIGKILLed.
	h.Faults = []Fault{{Kind: FKillMidRun, Target: "r2", Start: at(3), End: at(4)}}
	wantViolation(t, h, "outlived its replica")
}

func TestCheckShutdown(t *testing.T) {
	h := clean()
	h.Shutdown = &ShutdownState{
		ExitCodes: map[string]int{"r1": 0, "r2": 1},
		LocksHeld: []string{"l=r2"},
		LivePIDs:  []int{4242},
		LiveProcs: []string{"pid 1 shim"},
	}
	r := Check(h)
	if len(r.Violations) != 4 {
		t.Fatalf("violations: %q", r.Violations)
	}
}

func TestCheckCoverageAttribution(t *testing.T) {
	h := clean()
	drop := func(tick float64) {
		for i, r := range h.Runs {
			if r.Job == "t" && r.Tick.Equal(at(tick)) {
				h.Runs = append(h.Runs[:i], h.Runs[i+1:]...)
				return
			}
		}
	}
	// Tick 3: total outage (one node up) → ineligible, no quorum.
	// Tick 6: quorum but no stream leader → ineligible, election.
	// Tick 9: eligible, right after a kill of a replica → attributed.
	// Tick 10: eligible, no fault near → unexplained.
	for i := range h.Samples {
		switch s := h.Samples[i].Time.Sub(t0).Seconds(); {
		case s >= 2.9 && s <= 3.1:
			h.Samples[i].NodesUp = 1
		case s >= 5.9 && s <= 6.1:
			h.Samples[i].LockLeader = ""
		}
	}
	h.Faults = []Fault{{Kind: FKill, Target: "r5", Start: at(6.5), End: at(30)}}
	for _, tk := range []float64{3, 6, 9, 10} {
		drop(tk)
	}
	h.Runs = append(h.Runs, run("t", 100, 100, 100.1, "r1", 1, 1000, "ok")) // outside [From, To]
	r := Check(h)
	if !r.OK() {
		t.Fatalf("violations: %v", r.Violations)
	}
	want := map[string]string{"12:00:03": CauseNoQuorum, "12:00:06": CauseNoLeader, "12:00:09": "after kill", "12:00:10": CauseUnexplained}
	if len(r.Misses) != len(want) {
		t.Fatalf("misses: %+v", r.Misses)
	}
	for _, m := range r.Misses {
		if got := m.Cause; got != want[m.Tick.Format("15:04:05")] {
			t.Errorf("tick %s: cause %q, want %q", m.Tick.Format("15:04:05"), got, want[m.Tick.Format("15:04:05")])
		}
	}
	if r.Eligible != 8 || r.EligibleRan != 6 || r.Expected != 10 || r.Ran != 6 {
		t.Fatalf("eligible %d ran %d expected %d ran %d", r.Eligible, r.EligibleRan, r.Expected, r.Ran)
	}
}

func TestCheckTakeover(t *testing.T) {
	h := clean()
	// r2 (holding "l" from 1.01) is killed at 2; r3 takes over at 4.3.
	h.Runs[10] = run("l", 1, 1.01, -1, "r2", 200, 20, "")
	h.Runs[11] = run("l", 4, 4.3, 9, "r3", 201, 21, "ok")
	h.Faults = []Fault{{Kind: FKill, Target: "r2", Start: at(2), End: at(5)}}
	r := Check(h)
	if !r.OK() {
		t.Fatalf("violations: %v", r.Violations)
	}
	if d := r.Takeover[FKill]; len(d) != 1 || d[0] != 2300*time.Millisecond {
		t.Fatalf("takeover: %v", r.Takeover)
	}
}

func TestPercentile(t *testing.T) {
	ds := []time.Duration{5, 1, 3, 2, 4}
	if Percentile(ds, 50) != 3 || Percentile(ds, 100) != 5 || Percentile(ds, 1) != 1 || Percentile(nil, 50) != 0 {
		t.Fatal("percentile")
	}
}

func TestCheckVanishedRun(t *testing.T) {
	h := clean()
	// r3's long run lost its end line (SIGKILLed by cronlock after the
	// grace); the harness saw its process gone at 8.0.
	h.Runs[11] = run("l", 6, 6.01, -1, "r3", 201, 50, "")
	h.VanishedRuns = map[string]time.Time{h.Runs[11].Key(): at(8)}
	h.Runs = append(h.Runs, run("l", 9, 9.1, 11, "r1", 202, 51, "ok"))
	if r := Check(h); !r.OK() || r.Killed != 1 || r.KilledOther != 1 {
		t.Fatalf("vanished run: %v (killed %d, other %d)", r.Violations, r.Killed, r.KilledOther)
	}
	// The next holder starting before it vanished overlaps it.
	h.Runs[len(h.Runs)-1] = run("l", 7, 7.1, 11, "r1", 202, 51, "ok")
	wantViolation(t, h, "overlap")
}

func TestCheckTokenBackwards(t *testing.T) {
	h := clean()
	// The second long run starts after the first ended but with a lower
	// token: the lock state went back in time.
	h.Runs[11].Token = 1
	wantViolation(t, h, "token went backwards")
}

func TestCheckPosthumousStart(t *testing.T) {
	h := clean()
	// r3 was SIGKILLed at 6.0 while its shim was starting the job, which
	// wrote its start line at 6.01 and was then killed by the shim.
	h.Runs[11] = run("l", 6, 6.01, -1, "r3", 201, 50, "")
	h.Faults = []Fault{{Kind: FKillMidRun, Target: "r3", Start: at(6), End: at(8)}}
	h.Runs = append(h.Runs, run("l", 8, 8.1, 11, "r1", 202, 51, "ok"))
	r := Check(h)
	if !r.OK() || r.Posthumous != 1 || r.Killed != 1 {
		t.Fatalf("posthumous: %v (posthumous %d, killed %d)", r.Violations, r.Posthumous, r.Killed)
	}
}

func TestCheckPIDReuse(t *testing.T) {
	h := clean()
	// pid 105 ran tick 5 of "t"; much later the same pid runs "l": no
	// overlap, and the killed long run with a reused pid gets its own end.
	h.Runs = append(h.Runs, run("t", 11, 11.01, 11.02, "r1", 105, 100, "ok"))
	h.To = at(11)
	if r := Check(h); !r.OK() {
		t.Fatalf("pid reuse: %v", r.Violations)
	}
}

func TestCheckSilentOverlap(t *testing.T) {
	h := clean()
	// r2's whole tree was stopped from 3.0 to 7.0; r4 took over at 5.5;
	// on resume cronlock stopped r2's job (end 7.01) before it wrote.
	h.Runs[10].End, h.Runs[10].Status = at(7.01), "signal"
	h.Runs[11] = run("l", 5, 5.5, 11, "r4", 300, 500, "ok")
	h.Faults = []Fault{{Kind: FPauseTree, Target: "r2", Start: at(3), End: at(7)}}
	h.Fence = []FenceDecision{
		{Time: at(2.9), Job: "l", Token: h.Runs[10].Token, PID: 200, OK: true},
		{Time: at(5.6), Job: "l", Token: 500, PID: 300, OK: true},
	}
	r := Check(h)
	if !r.OK() || r.SilentOverlaps != 1 {
		t.Fatalf("silent: %v (silent %d)", r.Violations, r.SilentOverlaps)
	}
	// A stale write accepted after the new holder's first write (the
	// fence did not do its job) is a violation.
	h.Fence = append(h.Fence, FenceDecision{Time: at(5.7), Job: "l", Token: h.Runs[10].Token, PID: 200, OK: true})
	wantViolation(t, h, "overlap")
	// So is a silent overlap without a frozen host: two live holders,
	// whether the replica was cut off or only its cronlock was stopped.
	h.Fence = h.Fence[:2]
	for _, kind := range []string{FCut, FPause} {
		h.Faults[0].Kind = kind
		wantViolation(t, h, "overlap")
	}
}

func TestCheckCatchUp(t *testing.T) {
	h := clean()
	h.To = at(20)
	h.Samples = healthy(0, 25)
	h.Probed = true
	for i := range h.Samples {
		// The lock stream has no leader in [3, 5.5]; the history stream
		// answers requests only after 5.75.
		s := h.Samples[i].Time.Sub(t0).Seconds()
		if s >= 3 && s <= 5.5 {
			h.Samples[i].LockLeader = ""
		}
		h.Samples[i].LockAnswers, h.Samples[i].HistoryAnswers = true, s < 3 || s > 5.75
	}
	// The leader of the lock stream was killed at 3 and restarted at 6; a
	// follower was killed at 12. Nothing ran from 3 to 5.5; "t" caught up
	// at 5.8, then ran as usual.
	h.Runs = h.Runs[:0]
	tok := uint64(1)
	for i := 1; i <= 20; i++ {
		start := float64(i) + 0.01
		switch {
		case i >= 3 && i <= 4:
			continue
		case i == 5:
			start = 5.8
		}
		h.Runs = append(h.Runs, run("t", float64(i), start, start+0.01, "r1", 100+i, tok, "ok"))
		tok++
	}
	h.Faults = []Fault{
		{Seq: 1, Kind: FNATSLeaderKill, Target: "n1", Start: at(3), End: at(6)},
		{Seq: 2, Kind: FNATSKill, Target: "n2", Start: at(12), End: at(14)},
		{Seq: 3, Kind: FKill, Target: "r9", Start: at(16), End: at(17)},
	}
	r := Check(h)
	if len(r.CatchUps) != 2 {
		t.Fatalf("catch-ups: %v", r.CatchUps)
	}
	// From the last sample in which the history stream did not answer
	// (5.75) to the run at 5.8.
	if c := r.CatchUps[0]; !c.LeadersLost || !c.Ran || !c.Back.Equal(at(5.75)) || c.Delay != 50*time.Millisecond {
		t.Errorf("leader kill: %s", c)
	}
	// Without the probe, /jsz alone: from the last leaderless sample
	// (5.5) to the run at 5.8.
	h.Probed = false
	if c := Check(h).CatchUps[0]; !c.Back.Equal(at(5.5)) || c.Delay != 300*time.Millisecond {
		t.Errorf("leader kill, not probed: %s", c)
	}
	h.Probed = true
	// Leaders never lost: from the fault to the next run (12.01).
	if c := r.CatchUps[1]; c.LeadersLost || !c.Back.Equal(at(12)) || c.Delay != 10*time.Millisecond {
		t.Errorf("follower kill: %s", c)
	}
	if len(r.CatchUp[FNATSLeaderKill]) != 1 || len(r.CatchUp[FNATSKill]) != 1 || len(r.CatchUp[FKill]) != 0 {
		t.Errorf("by kind: %v", r.CatchUp)
	}
	// A catch-up that the next fault began before is listed, not counted:
	// with the follower kill at 5.78, before the run at 5.8, the leader
	// kill's catch-up would include the next fault's outage.
	h.Faults[1].Start, h.Faults[1].End = at(5.78), at(5.79)
	if r := Check(h); !r.CatchUps[0].Interrupted || len(r.CatchUp[FNATSLeaderKill]) != 0 || r.CatchUpInterrupted != 1 {
		t.Errorf("interrupted by the next fault: %v, by kind %v", r.CatchUps, r.CatchUp)
	}
	h.Faults[1].Start, h.Faults[1].End = at(12), at(14)
	// A short job that never runs again has no figure.
	h.Runs = h.Runs[:2]
	if r := Check(h); r.CatchUps[0].Ran || len(r.CatchUp[FNATSLeaderKill]) != 0 {
		t.Errorf("no run after the fault: %v", r.CatchUps)
	}
}
