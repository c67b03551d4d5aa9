package main

import (
	"context"

	"github.com/cronlock/cronlock/internal/app"
)

const runUsage = `
Usage: cronlock run [-c FILE]

Runs the scheduler: every job of the configuration file at its ticks, each
tick on one replica. Logs go to stderr.

Signals: SIGINT or SIGTERM shut down gracefully (no new runs; running jobs get
shutdown_grace to finish, then SIGTERM and SIGKILL after their grace).
SIGHUP reloads the file: added, removed and changed jobs take effect without
stopping running ones; an invalid file is rejected (errors logged) and the
running configuration stays; other settings need a restart. A change of the
file is reloaded the same way, without a signal, unless config_watch is false.

Flags:
  -c, --config FILE   configuration file (default $CRONLOCK_CONFIG, else cronlock.yaml)
`

func (c *cli) run(ctx context.Context, args []string) error {
	fs := c.newFlags("run", runUsage, true)
	if err := fs.parse(args, 0); err != nil {
		return err
	}
	cfg, err := fs.load()
	if err != nil {
		return err
	}
	d, err := app.NewDaemon(ctx, cfg, c.stderr)
	if err != nil {
		return err
	}
	if err := d.Run(ctx); err != nil {
		return err
	}
	if c.getenv(envCheckGoroutines) == "1" {
		return checkGoroutines()
	}
	return nil
}
