package scheduler

import (
	"sync"
	"time"
)

// workers runs the jobs' work (a tick, a rerun, a catch-up: loop.go) on
// goroutines kept for reuse. A goroutine that has finished its function
// waits up to workerIdle for the next before it exits, so an idle replica
// keeps none, and a replica whose jobs tick every second keeps about as
// many as run at once.
//
// Why not a goroutine per piece of work: a tick's goroutine grows its
// stack, by copying it, several times on the claim (the NATS request, the
// record's encoding), and a new goroutine starts again from the smallest
// stack; at 100 job-ticks/s on three replicas runtime.newstack was 9.5 %
// of each replica's CPU profile (BENCHMARKS.md). A reused goroutine keeps
// its stack between ticks (until the GC shrinks an idle one).
type workers struct {
	handoff chan func() // unbuffered: a send succeeds only to an idle worker
	quit    chan struct{}
	alive   sync.WaitGroup
	once    sync.Once
}

// workerIdle is how long a worker waits for more work before it exits:
// longer than a second, so that the workers of every-second jobs are kept
// from one tick to the next.
const workerIdle = 3 * time.Second

func newWorkers() *workers {
	return &workers{handoff: make(chan func()), quit: make(chan struct{})}
}

// run calls f on an idle worker, or on a new one if none is idle. It does
// not wait for f.
func (w *workers) run(f func()) {
	select {
	case w.handoff <- f:
	default:
		w.alive.Add(1)
		go w.loop(f)
	}
}

func (w *workers) loop(f func()) {
	defer w.alive.Done()
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		f()
		f = nil // not kept alive while idle
		idle.Reset(workerIdle)
		select {
		case f = <-w.handoff:
		case <-idle.C:
			return
		case <-w.quit:
			return
		}
	}
}

// stop makes the idle workers exit and waits until every worker has, the
// busy ones after their work. Nothing may be run after it.
func (w *workers) stop() {
	w.once.Do(func() { close(w.quit) })
	w.alive.Wait()
}
