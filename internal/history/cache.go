package history

import (
	"slices"
	"sync"
)

// Cache keeps, per job, the last state this replica wrote or read
// with its revision, so that the next update of the job starts from it
// instead of a read of the key and a decode of its JSON. The replica a
// tick is dealt to is usually the same from one tick to the next, so a
// claim then costs one write instead of a read and a write.
//
// It is a guess, never the truth: a write from it is a compare-and-swap
// on its revision, which fails if anyone wrote since, and Store.Update
// then reads the key. The watch of the bucket (seen) drops an entry as
// soon as another write of its key is delivered, which saves most of
// those failed writes.
//
// It holds at most maxCachedStates states (each up to a job's whole run
// history): a replica of 100,000 daily jobs gains nothing from keeping
// what it wrote a day ago, and would pay hundreds of MB. Past the bound a
// put drops another job's state, any one: a miss costs one read.
type Cache struct {
	mu     sync.Mutex
	m      map[string]cachedState
	states int // entries with a state (rev > 0)
}

// maxCachedStates bounds the states a Cache keeps.
const maxCachedStates = 4096

type cachedState struct {
	st  Record
	rev uint64 // 0: no state cached (only seen is known)
	// seen is the highest revision of the key the watch delivered.
	seen uint64
}

func NewCache() *Cache {
	return &Cache{m: map[string]cachedState{}}
}

// Get returns a copy of the cached state of the job and its revision.
func (c *Cache) Get(name string) (Record, uint64, bool) {
	if c == nil {
		return Record{}, 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[name]
	if !ok || e.rev == 0 || e.rev < e.seen {
		return Record{}, 0, false
	}
	st := e.st
	st.Runs = CloneRuns(st.Runs)
	return st, e.rev, true
}

// CloneRuns copies runs with room for one more: the claim that changes a
// copy adds an entry, which otherwise reallocated the whole slice again.
func CloneRuns(runs []Run) []Run {
	if runs == nil {
		return nil
	}
	return append(make([]Run, 0, len(runs)+1), runs...)
}

// put caches a copy of st at rev, unless the watch already delivered a
// later write.
func (c *Cache) put(name string, st Record, rev uint64) {
	st.Runs = slices.Clone(st.Runs)
	c.keep(name, st, rev)
}

// keep caches st at rev as put does, but st itself: its runs must never be
// changed in place again (Store.Update's contract).
func (c *Cache) keep(name string, st Record, rev uint64) {
	if c == nil || rev == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[name]
	if rev < e.seen || rev < e.rev {
		return
	}
	if e.rev == 0 {
		c.makeRoom(name)
		c.states++
	}
	e.st, e.rev = st, rev
	c.m[name] = e
}

// makeRoom drops the state of a job other than name while the cache holds
// maxCachedStates of them. c.mu is held.
func (c *Cache) makeRoom(name string) {
	for other, e := range c.m {
		if c.states < maxCachedStates {
			return
		}
		if other != name && e.rev != 0 {
			c.forget(other, e)
		}
	}
}

// forget drops e's state, keeping what the watch has seen. c.mu is held.
func (c *Cache) forget(name string, e cachedState) {
	if e.rev != 0 {
		c.states--
	}
	e.st, e.rev = Record{}, 0
	c.m[name] = e
}

// untouched reports whether nothing is known of the job's key: no state
// was cached, no write from the cache failed and the watch delivered no
// write of it.
func (c *Cache) untouched(name string) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.m[name]
	return !ok
}

// drop forgets the job's cached state (a write from it failed).
func (c *Cache) drop(name string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forget(name, c.m[name])
}

// seen notes a write of the job's key delivered by the watch: a cached
// state older than it is stale.
func (c *Cache) seen(name string, rev uint64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[name]
	if rev <= e.seen {
		return
	}
	e.seen = rev
	if e.rev < rev {
		c.forget(name, e)
		return
	}
	c.m[name] = e
}
