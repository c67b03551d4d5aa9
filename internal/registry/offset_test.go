package registry

import (
	"testing"
	"time"
)

// TestOffsetEstimate: the sample with the shortest round trip of the last
// offsetSamples wins, less half its round trip; a round trip over
// maxSampleRTT is ignored; the estimate is clamped at ±MaxOffset; a nil
// estimate never has one.
func TestOffsetEstimate(t *testing.T) {
	t.Parallel()
	var o OffsetEstimate
	if _, ok := o.Get(); ok {
		t.Fatal("an estimate before any sample")
	}
	o.Add(100*time.Millisecond, 40*time.Millisecond)
	o.Add(300*time.Millisecond, 10*time.Millisecond)
	o.Add(900*time.Millisecond, 2*maxSampleRTT) // too slow to count
	if d, ok := o.Get(); !ok || d != 295*time.Millisecond {
		t.Errorf("estimate %v (%v), want the quickest sample's 300ms less 5ms", d, ok)
	}
	for range offsetSamples { // the quick sample ages out
		o.Add(50*time.Millisecond, 20*time.Millisecond)
	}
	if d, _ := o.Get(); d != 40*time.Millisecond {
		t.Errorf("estimate %v after newer samples, want 40ms", d)
	}
	for range offsetSamples {
		o.Add(-3*MaxOffset, time.Millisecond)
	}
	if d, _ := o.Get(); d != -MaxOffset {
		t.Errorf("estimate %v, want clamped at %v", d, -MaxOffset)
	}
	var none *OffsetEstimate
	if d, ok := none.Get(); ok || d != 0 {
		t.Errorf("a nil estimate reports %v (%v)", d, ok)
	}
}
