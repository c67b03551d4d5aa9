package main

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
)

// manyJobsDue is how many jobs of TestManyJobsNoGoroutineEach tick every
// second; the others are daily, idle.
const manyJobsDue = 20

// TestManyJobsNoGoroutineEach: `cronlock run` with 20,000 jobs starts, runs
// the 20 that are due every second, and has about as many goroutines as with
// 200 jobs: an idle job costs no goroutine (nor a trigger subscription,
// which nats.go serves with a goroutine each). Not timed beyond generous
// bounds. The goroutines are counted in the runtime's dump at SIGQUIT, not
// from go_goroutines: /metrics at 20,000 jobs (360,000 series) takes longer
// than the HTTP write timeout in a binary built with the race detector.
func TestManyJobsNoGoroutineEach(t *testing.T) {
	t.Parallel()
	// Side by side; started here, as the helpers may call t.Fatal.
	few, many := startManyJobs(t, 200), startManyJobs(t, 20_000)
	f, m := few.goroutines(t), many.goroutines(t)
	if f <= 0 || m <= 0 {
		t.Fatalf("no goroutine dump at SIGQUIT (%d and %d goroutines)", f, m)
	}
	t.Logf("goroutines: %d with 200 jobs, %d with 20,000", f, m)
	// A run in progress has a few goroutines (its process, output, lease),
	// and 20 jobs are due every second on each side; runs still in progress
	// at the dump (a loaded machine: 26 of them, 220 goroutines against 36)
	// are not counted: the difference stays small, against 2 a job (39,600)
	// before.
	if m-f > 100 {
		t.Errorf("%d goroutines with 20,000 jobs against %d with 200: they grow with the number of jobs", m, f)
	}
}

// goroutineHeader starts each goroutine's stack in a Go runtime dump.
var goroutineHeader = regexp.MustCompile(`(?m)^goroutine [1-9][0-9]* `) // not 0: a thread idle in the scheduler

// manyJobsDaemon is a daemon of TestManyJobsNoGoroutineEach.
type manyJobsDaemon struct {
	n   int
	cmd *exec.Cmd
	d   *daemon
}

// startManyJobs starts a daemon with n jobs, manyJobsDue of them due every
// second.
func startManyJobs(t *testing.T, n int) *manyJobsDaemon {
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	dir := t.TempDir()
	var b strings.Builder
	fmt.Fprintf(&b, "nats: {url: %s}\nlock: {lease: 2s, renew: 500ms}\nhttp: {listen: \"\"}\nconfig_watch: false\njobs:\n", url)
	for i := range n {
		schedule := fmt.Sprintf("%d %d * * *", i%60, i/60%24)
		if i < manyJobsDue {
			schedule = "* * * * * *"
		}
		fmt.Fprintf(&b, "  - {name: job%d, schedule: %q, command: [\"true\"]}\n", i, schedule)
	}
	cmd := exec.Command(binary(t), "run", "-c", writeFile(t, dir, "cronlock.yaml", b.String()))
	cmd.Env = append(os.Environ(), "GOTRACEBACK=all")
	return &manyJobsDaemon{n: n, cmd: cmd, d: startDaemonCmd(t, dir, cmd)}
}

// goroutines waits until each due job has run, then returns the daemon's
// goroutines, counted in the dump it writes at SIGQUIT (which ends it).
func (m *manyJobsDaemon) goroutines(t *testing.T) int {
	finished := regexp.MustCompile(`"job":"(job\d+)".*"status":"succeeded".*"message":"run finished"`)
	waitFor(t, 60*time.Second, fmt.Sprintf("each of the %d due jobs of %d to run", manyJobsDue, m.n), func() bool {
		ran := map[string]bool{}
		for _, r := range finished.FindAllStringSubmatch(m.d.out.String(), -1) {
			ran[r[1]] = true
		}
		return len(ran) >= manyJobsDue
	})
	// Between two ticks, when the runs of the last one are over.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(1500 * time.Millisecond)))
	if err := m.cmd.Process.Signal(syscall.SIGQUIT); err != nil {
		t.Fatal(err)
	}
	<-m.d.exited
	return idleGoroutines(m.d.out.String())
}

// runGoroutine matches the creator of a goroutine that belongs to a run in
// progress: its process and output pumps, its lease; workGoroutine, the
// loop of a job being worked, which a run in progress has too.
var (
	runGoroutine  = regexp.MustCompile(`created by github.com/cronlock/cronlock/(scheduler\.\(\*Scheduler\)\.newHeldLock|internal/proc\.(startShim|\(\*shimProc\)\.startPumps))`)
	shimGoroutine = regexp.MustCompile(`created by github.com/cronlock/cronlock/internal/proc\.startShim`)
	workGoroutine = regexp.MustCompile(`created by github.com/cronlock/cronlock/scheduler\.\(\*Scheduler\)\.work`)
)

// idleGoroutines counts the goroutines of a runtime dump but those of runs
// in progress: a run's own, and one job loop per run (a loop working a job
// with no run, the sign of a goroutine per job, is counted).
func idleGoroutines(dump string) int {
	starts := goroutineHeader.FindAllStringIndex(dump, -1)
	var blocks []string
	for i, s := range starts {
		end := len(dump)
		if i+1 < len(starts) {
			end = starts[i+1][0]
		}
		blocks = append(blocks, dump[s[0]:end])
	}
	runs := 0
	for _, b := range blocks {
		if shimGoroutine.MatchString(b) {
			runs++
		}
	}
	n := 0
	for _, b := range blocks {
		switch {
		case runGoroutine.MatchString(b):
		case workGoroutine.MatchString(b) && runs > 0:
			runs--
		default:
			n++
		}
	}
	return n
}
