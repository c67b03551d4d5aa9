package main

import (
	"context"
	"fmt"
	"os"
	"os/user"

	"github.com/cronlock/cronlock/internal/app"
	"github.com/cronlock/cronlock/internal/config"
)

const suspendUsage = `
Usage: cronlock suspend [-c FILE] JOB

Suspends JOB for every replica: the suspension lives in NATS, so within a
second no replica starts its ticks any more; they are recorded as skipped
(reason suspended) and not caught up after 'cronlock resume'. A run in
progress is not stopped. Suspending a suspended job changes nothing.
A job with suspended: true in the configuration stays suspended whatever
suspend and resume do.

Flags (before JOB):
  -c, --config FILE   configuration file (default $CRONLOCK_CONFIG, else cronlock.yaml)
`

// suspendedBy labels a suspension in the shared state: "<user>@<host>
// (cronlock suspend)", so that status tells who to ask.
func suspendedBy() string { return operatorLabel("suspend") }

// operatorLabel names who runs the operator command cmd: "<user>@<host>
// (cronlock CMD)".
func operatorLabel(cmd string) string {
	return fmt.Sprintf("%s (cronlock %s)", userAtHost(), cmd)
}

// userAtHost is "<user>@<host>" of this process ("unknown" for a part it
// cannot tell).
func userAtHost() string {
	name := "unknown"
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	return name + "@" + host
}

func (c *cli) suspend(ctx context.Context, args []string) error {
	return c.onJob(ctx, "suspend", suspendUsage, args, func(ctx context.Context, cl *app.Client, name string, _ *config.Config) error {
		if err := cl.Suspend(ctx, name, suspendedBy()); err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "suspended %q: no replica starts its ticks any more; a run in progress goes on\n", name)
		return nil
	})
}

// onJob runs an operator command on one JOB (suspend, resume): it parses
// the flags and JOB, opens a session to NATS and calls act.
func (c *cli) onJob(ctx context.Context, cmd, usage string, args []string,
	act func(context.Context, *app.Client, string, *config.Config) error) error {
	name, cfg, err := parseJobArg(c.newFlags(cmd, usage, true), args)
	if err != nil {
		return err
	}
	return c.withJob(ctx, cfg, name, act)
}

// withJob opens a session to NATS for an operator command on JOB name,
// with the runtime jobs loaded when it may be one, and calls act.
func (c *cli) withJob(ctx context.Context, cfg *config.Config, name string,
	act func(context.Context, *app.Client, string, *config.Config) error) error {
	ctx, cl, done, err := c.queryConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer done()
	if err := loadRuntime(ctx, cl, name); err != nil {
		return err
	}
	return act(ctx, cl, name, cfg)
}

// parseJobArg parses the flags and the single JOB argument of suspend and
// resume, and checks that the configuration defines JOB (a usage error,
// exit 2, as for trigger), or may be a runtime job (see jobOrRuntime).
func parseJobArg(fs *flagSet, args []string) (string, *config.Config, error) {
	if err := fs.parse(args, 1); err != nil {
		return "", nil, err
	}
	if fs.NArg() != 1 {
		return "", nil, usagef("missing JOB")
	}
	cfg, err := fs.load()
	if err != nil {
		return "", nil, err
	}
	if err := jobOrRuntime(cfg, fs.Arg(0)); err != nil {
		return "", nil, err
	}
	return fs.Arg(0), cfg, nil
}
