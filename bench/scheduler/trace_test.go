package main

import (
	"testing"
	"time"
)

// TestHoldsOf: a hold runs from the first write naming its lease to the
// first write that frees the record or names another lease; renewals keep
// it, and a lease replaced without a freeing write was taken over.
func TestHoldsOf(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	evs := []lockEvent{
		{At: at(0), Free: true},                 // a free record: no hold
		{At: at(10), Lease: "a", Owner: "r1"},   // r1 takes
		{At: at(20), Lease: "a", Owner: "r1"},   // renews
		{At: at(30), Free: true},                // frees
		{At: at(40), Lease: "b", Owner: "r2"},   // r2 takes
		{At: at(5040), Lease: "c", Owner: "r1"}, // r1 takes over
		{At: at(5050), Free: true},              // frees
		{At: at(5060), Lease: "d", Owner: "r2"}, // open at the end: left out
	}
	got := holdsOf(evs)
	want := []hold{
		{lease: "a", owner: "r1", from: at(10), to: at(30)},
		{lease: "b", owner: "r2", from: at(40), to: at(5040), expired: true},
		{lease: "c", owner: "r1", from: at(5040), to: at(5050)},
	}
	if len(got) != len(want) {
		t.Fatalf("holds %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("hold %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
