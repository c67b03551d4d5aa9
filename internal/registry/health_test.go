package registry

import (
	"errors"
	"testing"
	"time"
)

// TestHealthSettled: the view of the others is trusted once an
// announcement went through and none failed within the last TTL.
func TestHealthSettled(t *testing.T) {
	t.Parallel()
	var h Health
	t0 := time.Now()
	if h.Settled(t0) {
		t.Fatal("settled before any announcement")
	}
	h.Note(nil, t0)
	if !h.Settled(t0) {
		t.Fatal("not settled after an announcement went through")
	}
	h.Note(errors.New("timeout"), t0)
	h.Note(nil, t0.Add(time.Second))
	if h.Settled(t0.Add(TTL - time.Millisecond)) {
		t.Error("settled within TTL of a failed announcement")
	}
	if !h.Settled(t0.Add(TTL)) {
		t.Error("not settled TTL after the last failure")
	}
}
