// Command chaos runs cronlock's fault-injection harness: a 3-node NATS
// cluster, five cronlock replicas behind controllable proxies, randomised
// faults, and a check of the recorded history.
//
//	go run ./internal/chaos/cmd/chaos -duration 30m -seed 42
//	go run ./internal/chaos/cmd/chaos -short -seed 42   # the CI sequence
//
// It exits 1 if a violation was found. The same binary is the jobs'
// recorder (see chaos.MaybeRecord).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/cronlock/cronlock/internal/chaos"
)

func main() {
	chaos.MaybeRecord()
	seed := flag.Uint64("seed", 0, "random seed (0: from the clock); printed, replay with the same value")
	dur := flag.Duration("duration", 2*time.Minute, "how long to inject faults")
	short := flag.Bool("short", false, "inject every fault kind once (the CI sequence) instead of random faults for -duration")
	dir := flag.String("dir", "", "work directory (default: a new temporary directory, kept)")
	md := flag.String("markdown", "", "also write the results as Markdown tables to this file")
	verbose := flag.Bool("v", false, "list every miss and overlap")
	waitBuild := flag.Duration("wait-build", 0, "keep retrying while ./cmd/cronlock does not build, up to this long")
	recheck := flag.String("recheck", "", "check the history.json of an earlier run instead of running (with -markdown, -v)")
	rereadRecords := flag.Bool("reread-records", false, "with -recheck: read the runs again from the records directory beside the history.json (the record reader may have changed since the run)")
	faults := flag.String("faults", "", "comma-separated fault kinds to inject, only (default: every kind)")
	flag.Parse()
	var kinds []string
	if *faults != "" {
		kinds = strings.Split(*faults, ",")
	}
	if *recheck != "" {
		os.Exit(recheckFile(*recheck, *md, *verbose, *rereadRecords))
	}
	if *seed == 0 {
		*seed = uint64(time.Now().UnixNano())
	}
	fmt.Printf("chaos: seed %d\n", *seed)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	t0 := time.Now()
	res, err := chaos.Run(ctx, chaos.Config{Seed: *seed, Duration: *dur, Short: *short, Dir: *dir, Recorder: exe, WaitBuild: *waitBuild, Log: os.Stdout, Kinds: kinds})
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	res.Report.Fprint(os.Stdout, res.History, *verbose)
	cmd := fmt.Sprintf("go run ./internal/chaos/cmd/chaos -duration %v -seed %d", *dur, *seed)
	if *short {
		cmd = fmt.Sprintf("go run ./internal/chaos/cmd/chaos -short -seed %d", *seed)
	}
	if *faults != "" {
		cmd += " -faults " + *faults
	}
	fmt.Printf("chaos: total %v; work dir %s; replay: %s\n", time.Since(t0).Round(time.Second), res.Dir, cmd)
	if *md != "" {
		if err := os.WriteFile(*md, []byte(res.Report.Markdown(res.History, cmd, *dur)), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "chaos:", err)
		}
	}
	if !res.Report.OK() {
		os.Exit(1)
	}
}

// recheckFile runs the checker on a saved history (the checker may have
// changed since the run). With reread, the runs are read again from the
// run's records directory (DIR/records beside DIR/history.json) instead of
// the ones the history saved.
func recheckFile(name, md string, verbose, reread bool) int {
	b, err := os.ReadFile(name)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 2
	}
	var h chaos.History
	if err := json.Unmarshal(b, &h); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 2
	}
	if reread {
		runs, err := chaos.ReadRecords(filepath.Join(filepath.Dir(name), "records"))
		if err != nil {
			fmt.Fprintln(os.Stderr, "chaos:", err)
			return 2
		}
		h.Runs = runs
	}
	r := chaos.Check(&h)
	r.Fprint(os.Stdout, &h, verbose)
	if md != "" {
		var dur time.Duration
		if len(h.Faults) > 0 {
			dur = h.Faults[len(h.Faults)-1].End.Sub(h.From)
		}
		os.WriteFile(md, []byte(r.Markdown(&h, "(recheck of "+name+")", dur)), 0o644)
	}
	if !r.OK() {
		return 1
	}
	return 0
}
