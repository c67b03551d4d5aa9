package scheduler

import (
	"context"
	"slices"
	"testing"
	"time"
)

// The gate hands out at most its limit of places; the waits beyond it get
// theirs in order of arrival as places are given back, an offer that does
// not use its place passes it on, and a wait that ends with its context
// holds no place.
func TestClaimGateOrderAndBound(t *testing.T) {
	t.Parallel()
	g := newClaimGate(2)
	ctx := context.Background()
	if err := g.enter(ctx); err != nil {
		t.Fatal(err)
	}
	var started []string
	waited := map[string]bool{}
	offer := func(name string, use bool) {
		g.offer(func(w bool) bool { started, waited[name] = append(started, name), w; return use })
	}
	offer("a", true) // the second place
	offer("b", false)
	offer("c", true)
	offer("d", true)
	if !slices.Equal(started, []string{"a"}) || g.waiting() != 3 {
		t.Fatalf("with 2 places: started %v, %d waiting; want [a], 3 waiting", started, g.waiting())
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if err := g.enter(cctx); err == nil {
		t.Fatal("enter with every place taken and its context ending: nil error, want the context's")
	}
	if g.waiting() != 3 {
		t.Fatalf("after the ended wait: %d waiting, want 3 (it left the queue)", g.waiting())
	}
	g.leave() // b takes it and passes it on to c
	if !slices.Equal(started, []string{"a", "b", "c"}) || g.waiting() != 1 {
		t.Fatalf("after one leave: started %v, %d waiting; want [a b c], 1 waiting", started, g.waiting())
	}
	if waited["a"] || !waited["b"] || !waited["c"] {
		t.Errorf("told they waited: a %v, b %v, c %v; want false (a place was free), true, true", waited["a"], waited["b"], waited["c"])
	}
	granted := make(chan error, 1)
	go func() { granted <- g.enter(ctx) }() // queued behind d
	waitUntil(t, func() bool { return g.waiting() == 2 })
	g.leave() // to d
	select {
	case <-granted:
		t.Fatal("enter got a place ahead of the offer queued before it")
	default:
	}
	g.leave() // to the enter
	if err := <-granted; err != nil {
		t.Fatal(err)
	}
	g.leave()
	g.leave()
	if g.inFlight != 0 || g.waiting() != 0 {
		t.Errorf("every place given back: %d in flight, %d waiting; want 0, 0", g.inFlight, g.waiting())
	}
}

// A gate without a limit never makes anyone wait.
func TestClaimGateUnbounded(t *testing.T) {
	t.Parallel()
	g := newClaimGate(0)
	for range 1000 {
		if err := g.enter(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	g.offer(func(bool) bool { n++; return true })
	if n != 1 || g.waiting() != 0 {
		t.Errorf("unbounded: offer ran %d times, %d waiting; want 1, 0", n, g.waiting())
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5 s")
		}
		time.Sleep(time.Millisecond)
	}
}

// A backlog that never drains (one tick queued for each place freed) keeps
// the queue's array bounded: the handed-out front is dropped.
func TestClaimGateSteadyBacklogStaysBounded(t *testing.T) {
	t.Parallel()
	g := newClaimGate(1)
	used := func(bool) bool { return true }
	g.offer(used) // holds the place
	for range 10 {
		g.offer(used)
	}
	for range 20 * compactAfter {
		g.offer(used)
		g.leave() // to the first waiting
	}
	if g.waiting() != 10 {
		t.Fatalf("%d waiting, want the steady backlog of 10", g.waiting())
	}
	if n := len(g.queue); n > 2*compactAfter+10 {
		t.Errorf("queue array of %d entries after %d offers through a backlog of 10, want at most %d", n, 20*compactAfter, 2*compactAfter+10)
	}
}
