package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/cronlock/cronlock/internal/app"
	"github.com/cronlock/cronlock/internal/config"
	"github.com/cronlock/cronlock/internal/liveout"
	"github.com/cronlock/cronlock/scheduler"
)

// logsDrain is how long `logs -f` waits, once the history shows the run
// ended, for the run's last live messages (sent before the result is
// recorded, so normally already there).
const logsDrain = time.Second

const logsUsage = `
Usage: cronlock logs [-c FILE] [-f] JOB

Prints the output of JOB's last finished run, as kept in the shared history
(its last history.output_tail bytes). With -f, when a run of JOB is
running, on whichever replica, prints its output instead as the job
produces it, until the run ends; a run's output from before the command
started is not kept anywhere while the run runs, so without -f a running
run is only mentioned (on stderr). Output that the replica had to drop to
keep up (a job writing faster than 1 MiB/s) is marked in place with a line
"[... N bytes dropped]", messages this command missed with "[... N messages
lost]". Notes about the runs (which run, how it ended) go to stderr; the
output goes to stdout unchanged.

A JOB that neither the configuration nor the runtime jobs define is a
usage error (exit 2).

Exit codes: 0 the output was printed (with -f: the run ended, however it
ended); 1 NATS failed; 2 bad usage or an unknown JOB.

Flags (before JOB):
  -c, --config FILE   configuration file (default $CRONLOCK_CONFIG, else cronlock.yaml)
  -f                  follow the running run's output until it ends
`

func (c *cli) logs(ctx context.Context, args []string) error {
	fs := c.newFlags("logs", logsUsage, true)
	follow := fs.Bool("f", false, "follow the running run's output until it ends")
	name, cfg, err := parseJobArg(fs, args)
	if err != nil {
		return err
	}
	timeout := queryTimeout
	if *follow {
		timeout = 0 // the run's length
	}
	ctx, cancel := operatorContext(ctx, timeout)
	defer cancel()
	return failFast(ctx, func(ctx context.Context) error { return c.logsOf(ctx, cfg, name, *follow) })
}

// logsOf is logs once the flags are read.
func (c *cli) logsOf(ctx context.Context, cfg *config.Config, name string, follow bool) error {
	cl, err := c.dial(ctx, cfg, false)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := loadRuntime(ctx, cl, name); err != nil {
		return err
	}
	var f *liveout.Follower
	if follow { // before reading the history: a run it shows running is seen from then on
		if f, err = cl.FollowOutput(ctx, name); err != nil {
			return err
		}
		defer f.Stop()
	}
	hist, err := cl.History(ctx, 0, name)
	if err != nil {
		return err
	}
	running, last := runningAndLast(hist[0].Runs)
	if len(running) == 0 || !follow {
		c.printLastTail(name, last)
	}
	if len(running) == 0 {
		return nil
	}
	if !follow {
		for _, r := range running {
			fmt.Fprintf(c.stderr, "%s: a run is running on %s since %s (tick %s); 'cronlock logs -f %s' shows its output as it is produced\n",
				name, r.Owner, r.Start.Format(time.RFC3339), r.Tick.Format(time.RFC3339), name)
		}
		return nil
	}
	return c.followRuns(ctx, cl, f, running)
}

// runningAndLast returns the running runs of a job's history, and its last finished
// run that ran (nil if none).
func runningAndLast(runs []scheduler.Run) (running []scheduler.Run, last *scheduler.Run) {
	for i, r := range runs {
		switch {
		case !r.Finished():
			running = append(running, r)
		case last == nil && !r.Start.IsZero():
			last = &runs[i]
		}
	}
	return running, last
}

// printLastTail prints the kept output of the job's last finished run.
func (c *cli) printLastTail(name string, last *scheduler.Run) {
	if last == nil {
		fmt.Fprintf(c.stderr, "%s: no finished run in the history\n", name)
		return
	}
	fmt.Fprintf(c.stderr, "%s: last run %s on %s (tick %s), its kept output:\n",
		name, last.Status, last.Owner, last.Tick.Format(time.RFC3339))
	io.WriteString(c.stdout, last.Output)
}

// followRuns prints the live output of the running runs until each has
// ended in the history.
func (c *cli) followRuns(ctx context.Context, cl *app.Client, f *liveout.Follower, running []scheduler.Run) error {
	type result struct {
		run scheduler.Run
		err error
	}
	done := make(chan result, len(running))
	followed := map[string]bool{}
	for _, r := range running {
		followed[runKey(r.Owner, r.Token)] = true
		fmt.Fprintf(c.stderr, "%s: following the run on %s (tick %s)\n", r.Job, r.Owner, r.Tick.Format(time.RFC3339))
		go func() {
			fin, err := cl.AwaitRun(ctx, r)
			done <- result{fin, err}
		}()
	}
	events := make(chan liveout.Event)
	evCtx, stopEvents := context.WithCancel(ctx)
	defer stopEvents()
	go func() {
		for {
			e, err := f.Next(evCtx)
			if err != nil {
				close(events)
				return
			}
			select {
			case events <- e:
			case <-evCtx.Done():
				return
			}
		}
	}()
	ended := map[string]int{}   // attempts per run, once the history shows it ended
	lastEnd := map[string]int{} // the last attempt whose end message came
	var drain <-chan time.Time
	for {
		select {
		case e, ok := <-events:
			if !ok {
				return ctx.Err()
			}
			key := runKey(e.Run.Owner, e.Run.Token)
			if !followed[key] {
				continue
			}
			io.WriteString(c.stdout, e.Markers())
			c.stdout.Write(e.Data)
			if e.End {
				lastEnd[key] = max(lastEnd[key], e.Run.Attempt)
			}
		case x := <-done:
			if x.err != nil {
				return x.err
			}
			fmt.Fprintf(c.stderr, "%s: the run on %s ended: %s\n", x.run.Job, x.run.Owner, describeEnd(x.run))
			ended[runKey(x.run.Owner, x.run.Token)] = x.run.Attempts
			if len(ended) == len(running) {
				drain = time.After(logsDrain)
			}
		case <-drain:
			return nil
		}
		if len(ended) == len(running) && allEnded(ended, lastEnd) {
			return nil
		}
	}
}

// allEnded reports whether the last attempt of every ended run has sent its
// end message.
func allEnded(ended, lastEnd map[string]int) bool {
	for key, attempts := range ended {
		if lastEnd[key] < attempts {
			return false
		}
	}
	return true
}

// runKey identifies a run in the live output: its replica and token.
func runKey(owner string, token uint64) string { return fmt.Sprintf("%s\x00%d", owner, token) }

// describeEnd is a finished run's status, exit code and error.
func describeEnd(r scheduler.Run) string {
	s := string(r.Status)
	if r.ExitCode != nil {
		s += fmt.Sprintf(" (exit %d)", *r.ExitCode)
	}
	if r.Error != "" {
		s += ": " + r.Error
	}
	return s
}
