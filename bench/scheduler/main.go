// Command scheduler is a load benchmark of package scheduler: R replicas, each
// a separate process with its own NATS connection, Locker and Scheduler, run
// J every-second jobs against one embedded nats-server (JetStream, file
// store, loopback), and the parent checks that every tick ran exactly once.
//
//	go run ./bench/scheduler -jobs 1000 -duration 60s
//	go run ./bench/scheduler -jobs 10 -duration 30s
//	go run ./bench/scheduler -sweep 100,250,500,1000,2000 -duration 30s
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
	Tap        bool          `json:"tap"`
	Trace      int           `json:"trace"`

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
	var sweep string
	fs.IntVar(&c.Replicas, "replicas", 3, "number of replica processes")
	fs.IntVar(&c.Jobs, "jobs", 1000, "jobs per replica (bench.job-0000, …), all on -schedule")
	fs.StringVar(&c.Schedule, "schedule", "* * * * * *", "cron schedule of every job")
	fs.DurationVar(&c.Duration, "duration", 60*time.Second, "how long the replicas run their schedulers")
	fs.DurationVar(&c.Work, "work", 0, "how long each run takes (sleeps, or until its context is cancelled)")
	fs.DurationVar(&c.Margin, "margin", 5*time.Second, "ticks within this of the start or the end are not checked for missing runs")
	fs.StringVar(&c.CPUProfile, "cpuprofile", "", "write each replica's CPU profile (over the run) to `file`.<replica>")
	fs.StringVar(&c.ServerProf, "server-cpuprofile", "", "write the parent's (nats-server's) CPU profile over the run to `file`")
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
		counts = nil
		for _, f := range strings.Split(sweep, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				fmt.Fprintf(stderr, "-sweep: bad job count %q\n", f)
				return 2
			}
			counts = append(counts, n)
		}
	}
	var results []*result
	failed := false
	for _, n := range counts {
		cc := c
		cc.Jobs = n
		if sweep != "" && c.CPUProfile != "" {
			cc.CPUProfile = fmt.Sprintf("%s.j%d", c.CPUProfile, n)
		}
		res, err := bench(context.Background(), cc)
		if err != nil {
			fmt.Fprintf(stderr, "jobs=%d: %v\n", n, err)
			failed = true
			if res == nil {
				continue
			}
		}
		printSummary(stdout, res)
		results = append(results, res)
	}
	if len(results) > 1 {
		printSweep(stdout, results)
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
