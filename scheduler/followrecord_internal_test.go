package scheduler

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/rs/zerolog"
)

// A hold's own write, delivered while the hold starts following its
// record, is never taken for a loss: whichever of the two looks last reads
// the view the other saw, or a newer one. (Read before the hold's mutex, a
// view from before the write could be judged after the delivery of the
// write had been seen, and the hold was lost at its start.)
func TestHoldStartingToFollowIsNotLostToItsOwnWrite(t *testing.T) {
	t.Parallel()
	s := &Scheduler{claims: newClaims(), log: zerolog.Nop()}
	const holds = 20000
	for i := range holds {
		name := "j" + strconv.Itoa(i)
		ctx, end := context.WithCancelCause(context.Background())
		l := &heldLock{s: s, name: name, id: "lease", stop: make(chan struct{}), moved: make(chan struct{}), ctx: ctx, end: end}
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); l.followRecord() }()
		go func() { defer wg.Done(); s.claims.observe(name, view{holder: "lease", rev: 1}) }()
		wg.Wait()
		if context.Cause(ctx) != nil {
			t.Fatalf("hold %d of %d lost to the delivery of its own write: %v", i+1, holds, context.Cause(ctx))
		}
		l.unfollowRecord()
	}
}
