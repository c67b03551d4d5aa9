package scheduler

import (
	"testing"
	"time"
)

// The lead is claimAhead while claims are quick, twice the longest recent
// claim when they are slow, never more than maxClaimAhead, and back to
// claimAhead once slow claims are a few half-lives old.
func TestClaimPaceLead(t *testing.T) {
	t.Parallel()
	var p claimPace
	t0 := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	if got := p.lead(t0); got != claimAhead {
		t.Fatalf("lead with no claim seen = %v, want %v", got, claimAhead)
	}
	p.observe(t0, 10*time.Millisecond)
	if got := p.lead(t0); got != claimAhead {
		t.Errorf("lead after a 10 ms claim = %v, want the floor %v", got, claimAhead)
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
	if got := p.lead(t0.Add(5 * claimPaceHalfLife)); got != claimAhead {
		t.Errorf("lead five half-lives later = %v, want the floor %v", got, claimAhead)
	}
	p.observe(t0, 3*time.Second)
	if got := p.lead(t0); got != maxClaimAhead {
		t.Errorf("lead after a 3 s claim = %v, want the cap %v", got, maxClaimAhead)
	}
}
