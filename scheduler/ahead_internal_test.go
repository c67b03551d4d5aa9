package scheduler

import (
	"testing"
	"time"
)

// The lead is zero while claims are quick, twice the longest recent claim
// when they are slow, never more than maxClaimAhead, and back to zero once
// slow claims are a few half-lives old.
func TestClaimPaceLead(t *testing.T) {
	t.Parallel()
	var p claimPace
	t0 := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	if got := p.lead(t0); got != 0 {
		t.Fatalf("lead with no claim seen = %v, want 0", got)
	}
	p.observe(t0, 2*time.Millisecond)
	if got := p.lead(t0); got != 0 {
		t.Errorf("lead after a 2 ms claim = %v, want 0 (below %v)", got, minClaimAhead)
	}
	p.observe(t0, 150*time.Millisecond)
	if got := p.lead(t0); got != 300*time.Millisecond {
		t.Errorf("lead after a 150 ms claim = %v, want 300ms", got)
	}
	p.observe(t0, 20*time.Millisecond) // a quick claim does not undo the slow one
	if got := p.lead(t0.Add(time.Second)); got < 250*time.Millisecond {
		t.Errorf("lead 1 s after a 150 ms claim = %v, want it still near 300ms", got)
	}
	if got := p.lead(t0.Add(claimPaceHalfLife)); got != 150*time.Millisecond {
		t.Errorf("lead a half-life later = %v, want 150ms", got)
	}
	if got := p.lead(t0.Add(6 * claimPaceHalfLife)); got != 0 {
		t.Errorf("lead six half-lives later = %v, want 0 (2×150ms/64 is below %v)", got, minClaimAhead)
	}
	p.observe(t0, 800*time.Millisecond)
	if got := p.lead(t0); got != maxClaimAhead {
		t.Errorf("lead after an 800 ms claim = %v, want the cap %v", got, maxClaimAhead)
	}
}

// A claim that took longer than claimStalled waited for NATS, not for its
// turn: it leaves the lead as it was.
func TestClaimPaceLeavesOutStalledClaims(t *testing.T) {
	t.Parallel()
	var p claimPace
	t0 := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	p.observe(t0, 3*time.Second)
	if got := p.lead(t0); got != 0 {
		t.Errorf("lead after a claim stalled 3 s = %v, want 0", got)
	}
	p.observe(t0, 20*time.Millisecond)
	p.observe(t0, 2*time.Second)
	if got := p.lead(t0); got != 40*time.Millisecond {
		t.Errorf("lead after a 20 ms claim and a stalled one = %v, want 40ms", got)
	}
}
