package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/cronlock/cronlock/lock"
)

const unlockUsage = `
Usage: cronlock unlock [-c FILE] --force JOB

Force-releases JOB's lock, whoever holds it: the job's record in the
history bucket, else the key of the lock bucket. Use it only when the holder
is known to be gone and you cannot wait for its lease to expire (lock.lease):
a holder that is still alive loses its lease at once (at its next renewal at
the latest) and its run is cancelled, and another replica may start the job
meanwhile. Without --force
the command refuses (exit 2). Exit 1 if the lock is not held.

Flags (before JOB):
  -c, --config FILE   configuration file (default $CRONLOCK_CONFIG, else cronlock.yaml)
  --force             really release the lock
`

func (c *cli) unlock(ctx context.Context, args []string) error {
	fs := c.newFlags("unlock", unlockUsage, true)
	force := fs.Bool("force", false, "really release the lock")
	if err := fs.parse(args, 1); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("missing JOB")
	}
	name := fs.Arg(0)
	if err := lock.ValidateKey(name); err != nil {
		return usagef("%v", err)
	}
	if !*force {
		return usagef("refusing to release %q without --force: a holder that is still alive "+
			"loses its lease and its run is cancelled; if the holder is known to be gone, run "+
			"'cronlock unlock --force %s'", name, name)
	}
	ctx, cl, done, err := c.query(ctx, fs)
	if err != nil {
		return err
	}
	defer done()
	h, err := cl.Unlock(ctx, name)
	if errors.Is(err, lock.ErrNotHeld) {
		return fmt.Errorf("lock %q is not held", name)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "released lock %q held by %s (token %d)\n", name, h.Owner, h.Token)
	return nil
}
