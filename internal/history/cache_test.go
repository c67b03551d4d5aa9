package history

import (
	"fmt"
	"testing"
)

// The cache keeps at most maxCachedStates states, whatever the number of
// jobs, and the one just put is always among them.
func TestStateCacheIsBounded(t *testing.T) {
	t.Parallel()
	c := NewCache()
	for i := range 3 * maxCachedStates {
		name := fmt.Sprintf("job-%d", i)
		c.put(name, Record{Seq: uint64(i)}, uint64(i+1))
		if _, _, ok := c.Get(name); !ok {
			t.Fatalf("%s: not cached right after its put", name)
		}
	}
	held := 0
	for name := range c.m {
		if _, _, ok := c.Get(name); ok {
			held++
		}
	}
	if held != maxCachedStates || c.states != held {
		t.Errorf("%d states held (counted %d), want %d", held, c.states, maxCachedStates)
	}
	c.seen("job-0", 1<<40) // a later write of a held or dropped job
	c.drop(fmt.Sprintf("job-%d", 3*maxCachedStates-1))
	if c.states != maxCachedStates-1 && c.states != maxCachedStates-2 {
		t.Errorf("after seen and drop: %d states counted", c.states)
	}
}
