// Command scheduler is a load benchmark of package scheduler: R replicas, each
// a separate process with its own NATS connection, Locker and Scheduler, run
// J every-second jobs against one embedded nats-server (JetStream, file
// store, loopback), and the parent checks that every tick ran exactly once.
//
//	go run ./bench/scheduler -jobs 1000 -duration 60s
//	go run ./bench/scheduler -jobs 10 -duration 30s
//	go run ./bench/scheduler -sweep 100,250,500,1000,2000 -duration 30s
//	go run ./bench/scheduler -replicas 1,3,10,20 -jobs 500 -duration 20s
//	go run ./bench/scheduler -idle -jobs 100000 -replicas 3
//
// The parent process hosts the nats-server and re-executes its own binary
// once per replica. Replicas register their jobs, then all start their
// scheduler at the same instant and stop it (cancelling Run's context) after
// -duration. Each prints one JSON line: its runs (tick, start − tick), CPU
// (getrusage), max RSS, Go heap, nc.Stats() deltas, and the scheduler's
// Prometheus counters. The parent merges them: for every job, each tick in
// [start + margin, end − margin] must have run exactly once across replicas.
// The parent's own CPU over the run is, roughly, the nats-server's.
//
// Per job-tick the summary gives the stored writes by bucket (each
// stream's last sequence before and after the run: successful writes and
// markers; a write refused by a compare-and-swap is not stored), the
// server's messages in and out (Varz; also without the bench's own
// connections), the messages each replica's connection received, and CPU
// (replicas' getrusage plus the parent's, which -trace and -phases add
// to). A comma-separated -replicas runs
// once per count. -idle registers -jobs daily jobs spread over the day and
// reports, over a window after a settle period, each replica's goroutines,
// RSS, heap and CPU, the parent's (embedded server's), and the time from
// spawning a replica to its jobs being added.
//
// Results and analysis: bench/scheduler/RESULTS.md.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// config is one benchmark run.
type config struct {
	Replicas   int           `json:"replicas"`
	Jobs       int           `json:"jobs"`
	Schedule   string        `json:"schedule"`
	Duration   time.Duration `json:"duration"`
	Work       time.Duration `json:"work"`
	Margin     time.Duration `json:"margin"`
	CPUProfile string        `json:"-"` // replica profiles: <CPUProfile>.<replica>
	ServerProf string        `json:"-"` // parent (nats-server) CPU profile
	MemProfile string        `json:"-"` // replica heap profiles: <MemProfile>.<replica>
	Tap        bool          `json:"tap"`
	// Colocate runs the replicas in one process (one Go runtime), each
	// with its own connection, lock client and scheduler, as the side-by-
	// side comparisons with single-process peers run theirs.
	Colocate bool `json:"colocate,omitempty"`
	Trace    int  `json:"trace"`
	// Phases samples the machine's CPU by phase of the second (-phases).
	// The sampler runs in the parent, whose CPU is counted as the server's:
	// 50 reads of /proc/stat a second were 80 µs per job-tick at 100
	// job-ticks/s, as much as the server's own work, so it is off unless
	// asked for.
	Phases bool `json:"phases,omitempty"`
	// Idle mode (-idle): the jobs are daily, spread over the day, so almost
	// none fire; the replicas are measured over [Settle, Settle+Window]
	// after the common start.
	Idle   bool          `json:"idle"`
	Settle time.Duration `json:"settle,omitempty"`
	Window time.Duration `json:"window,omitempty"`

	exe    string    // binary to re-execute as a replica
	stderr io.Writer // progress and replicas' stderr
}

func main() {
	if os.Getenv(replicaEnv) != "" {
		replicaMain()
		return
	}
	os.Exit(cli(os.Args[1:], os.Stdout, os.Stderr))
}

func cli(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("scheduler", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	var jsonOut bool
	var sweep, replicas string
	fs.StringVar(&replicas, "replicas", "3", "number of replica processes; a comma-separated list (1,3,10,20) runs once per count at the same -jobs and prints a table")
	fs.IntVar(&c.Jobs, "jobs", 1000, "jobs per replica (bench.job-0000, …), all on -schedule")
	fs.BoolVar(&c.Phases, "phases", false, "sample the machine's CPU busy % by 100 ms phase of the second (its CPU counts as the server's: about 8 ms a second)")
	fs.BoolVar(&c.Idle, "idle", false, "idle mode: -jobs daily jobs spread over the day (almost none fire); report goroutines, RSS, heap, CPU and server messages over -idle-window after -idle-settle, and the time to ready")
	fs.DurationVar(&c.Settle, "idle-settle", 10*time.Second, "idle mode: time after the common start before the measured window")
	fs.DurationVar(&c.Window, "idle-window", 10*time.Second, "idle mode: length of the measured window")
	fs.StringVar(&c.Schedule, "schedule", "* * * * * *", "cron schedule of every job")
	fs.DurationVar(&c.Duration, "duration", 60*time.Second, "how long the replicas run their schedulers")
	fs.DurationVar(&c.Work, "work", 0, "how long each run takes (sleeps, or until its context is cancelled)")
	fs.DurationVar(&c.Margin, "margin", 5*time.Second, "ticks within this of the start or the end are not checked for missing runs")
	fs.StringVar(&c.CPUProfile, "cpuprofile", "", "write each replica's CPU profile (over the run) to `file`.<replica>")
	fs.StringVar(&c.MemProfile, "memprofile", "", "write each replica's heap profile (just before its shutdown) to `file`.<replica>")
	fs.StringVar(&c.ServerProf, "server-cpuprofile", "", "write the parent's (nats-server's) CPU profile over the run to `file`")
	fs.BoolVar(&c.Colocate, "colocate", false, "run the -replicas replicas in one process (one Go runtime; each its own connection, lock and scheduler) instead of a process each; CPU, memory and goroutines are then the process's")
	fs.BoolVar(&c.Tap, "tap", false, "count every message on the server by kind (subscribes to '>'; adds load: use with few jobs)")
	fs.IntVar(&c.Trace, "trace", 20, "follow the locks of the first `n` jobs (stored writes) and report holds: who ran the job, who found its tick claimed")
	fs.StringVar(&sweep, "sweep", "", "comma-separated job counts: run once per count (fresh server each), -duration each, and print a table")
	fs.BoolVar(&jsonOut, "json", false, "print the merged result(s) as JSON on stdout after the summary")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: go run ./bench/scheduler [flags]\n\n"+
			"Load benchmark of the cronlock scheduler: -replicas processes run -jobs\n"+
			"every-second jobs against one embedded nats-server for -duration; every tick\n"+
			"must run exactly once across replicas.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "unexpected arguments: %q\n", fs.Args())
		return 2
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	c.exe, c.stderr = exe, stderr

	counts := []int{c.Jobs}
	if sweep != "" {
		if counts, err = positiveList(sweep); err != nil {
			fmt.Fprintf(stderr, "-sweep: %v\n", err)
			return 2
		}
	}
	reps, err := positiveList(replicas)
	if err != nil {
		fmt.Fprintf(stderr, "-replicas: %v\n", err)
		return 2
	}
	if c.Colocate && (c.Idle || c.Trace > 0) {
		fmt.Fprintln(stderr, "-colocate: use with -trace 0 and without -idle (both follow one replica's connection)")
		return 2
	}
	if c.Idle {
		if c.Settle < 0 || c.Window <= 0 {
			fmt.Fprintln(stderr, "-idle-settle must be ≥ 0 and -idle-window > 0")
			return 2
		}
		c.Duration = c.Settle + c.Window + idleTail
		c.Trace = 0 // the daily jobs do not tick in the window
	}
	var results []*result
	failed := false
	for _, r := range reps {
		for _, n := range counts {
			cc := c
			cc.Jobs, cc.Replicas = n, r
			if (sweep != "" || len(reps) > 1) && c.CPUProfile != "" {
				cc.CPUProfile = fmt.Sprintf("%s.r%d.j%d", c.CPUProfile, r, n)
			}
			if (sweep != "" || len(reps) > 1) && c.MemProfile != "" {
				cc.MemProfile = fmt.Sprintf("%s.r%d.j%d", c.MemProfile, r, n)
			}
			res, err := bench(context.Background(), cc)
			if err != nil {
				fmt.Fprintf(stderr, "replicas=%d jobs=%d: %v\n", r, n, err)
				failed = true
				if res == nil {
					continue
				}
			}
			printSummary(stdout, res)
			results = append(results, res)
		}
	}
	if len(results) > 1 {
		if c.Idle {
			printIdleSweep(stdout, results)
		} else {
			printSweep(stdout, results)
			printPerJobTick(stdout, results)
		}
	}
	if jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if len(results) == 1 {
			enc.Encode(results[0])
		} else {
			enc.Encode(results)
		}
	}
	for _, r := range results {
		if r.Duplicates > 0 {
			failed = true
		}
	}
	if failed {
		return 1
	}
	return 0
}

// idleTail is how long the replicas run after the idle window, so that the
// window's end sample is taken before any replica shuts down.
const idleTail = time.Second

// positiveList parses "1,3,10" into positive integers.
func positiveList(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad count %q (want positive integers, comma-separated)", f)
		}
		out = append(out, n)
	}
	return out, nil
}
