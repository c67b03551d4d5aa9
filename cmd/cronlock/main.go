package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/cronlock/cronlock/internal/proc"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1 // a runtime failure: NATS, a job, a lock
	exitUsage   = 2 // bad usage or a bad configuration file
	// exitNoReplica: trigger's request was taken by no replica in time.
	exitNoReplica = 3
)

// exitError is a runtime failure with an exit code of its own (not 1).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func main() {
	proc.Init() // first: in a job's supervisor process it never returns
	c := &cli{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
	os.Exit(c.main(context.Background(), os.Args[1:]))
}

// cli is one invocation of cronlock, with its output streams and
// environment injected so tests can run commands in-process.
type cli struct {
	stdin          io.Reader // nil reads as empty
	stdout, stderr io.Writer
	getenv         func(string) string
}

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(c *cli, ctx context.Context, args []string) error
}

// commands in the order `cronlock help` lists them.
var commands = []command{
	{"run", "run the scheduler", (*cli).run},
	{"validate", "check the configuration file, print each job's next three runs", (*cli).validate},
	{"next", "print the next run times", (*cli).next},
	{"locks", "show who holds which lock", (*cli).locks},
	{"status", "show each job's last runs from the shared history", (*cli).status},
	{"trigger", "have a replica run one job once now, under its lock", (*cli).trigger},
	{"cancel", "stop a job's running run, wherever it runs", (*cli).cancel},
	{"backfill", "run the ticks of a past range that have no run", (*cli).backfill},
	{"logs", "print a job's output: of its last run, or live as a run produces it (-f)", (*cli).logs},
	{"unlock", "force-release a job's lock", (*cli).unlock},
	{"suspend", "stop every replica from starting a job's ticks", (*cli).suspend},
	{"resume", "let replicas start a suspended job's ticks again", (*cli).resume},
	{"replicas", "list the running replicas", (*cli).replicas},
	{"jobs", "put, get, list, delete the runtime jobs and show their history", (*cli).jobs},
	{"import", "convert a crontab into a configuration file", (*cli).importCrontab},
	{"version", "print the version", (*cli).version},
}

// main runs the command named by args[0] and returns the process exit code.
func (c *cli) main(ctx context.Context, args []string) int {
	if len(args) == 0 {
		c.topUsage(c.stderr)
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "-h", "-help", "--help":
		c.topUsage(c.stdout)
		return exitOK
	case "help":
		if len(rest) == 0 {
			c.topUsage(c.stdout)
			return exitOK
		}
		name, rest = rest[0], []string{"--help"}
	}
	for _, cmd := range commands {
		if cmd.name == name {
			return c.exit(name, failFast(ctx, func(ctx context.Context) error { return cmd.run(c, ctx, rest) }))
		}
	}
	fmt.Fprintf(c.stderr, "cronlock: unknown command %q\nRun 'cronlock help' for usage.\n", name)
	return exitUsage
}

// exit prints err, if any, and maps it to an exit code: errHelp is 0, a
// *usageError 2, an *exitError its code, anything else 1.
func (c *cli) exit(name string, err error) int {
	var ue *usageError
	var ee *exitError
	switch {
	case err == nil, errors.Is(err, errHelp):
		return exitOK
	case errors.As(err, &ue):
		if ue.configErr {
			fmt.Fprintln(c.stderr, ue.err)
		} else {
			fmt.Fprintf(c.stderr, "cronlock %s: %v\nRun 'cronlock %s --help' for usage.\n", name, ue.err, name)
		}
		return exitUsage
	case errors.As(err, &ee):
		fmt.Fprintf(c.stderr, "cronlock %s: %s\n", name, strings.TrimSpace(err.Error()))
		return ee.code
	default:
		fmt.Fprintf(c.stderr, "cronlock %s: %s\n", name, strings.TrimSpace(err.Error()))
		return exitFailure
	}
}

func (c *cli) topUsage(w io.Writer) {
	fmt.Fprint(w, `cronlock runs scheduled jobs on many replicas; each tick of each job runs on
exactly one of them, coordinated through NATS JetStream.

Usage:
  cronlock <command> [flags] [arguments]

Commands:
`)
	for _, cmd := range commands {
		fmt.Fprintf(w, "  %-9s %s\n", cmd.name, cmd.summary)
	}
	fmt.Fprint(w, `
Every command takes --help. Flags come before arguments (cronlock trigger
-c FILE JOB). -c/--config defaults to $CRONLOCK_CONFIG, else cronlock.yaml.

Exit codes: 0 ok, 1 runtime failure, 2 bad usage or bad configuration,
3 no replica took a trigger request in time.
`)
}
