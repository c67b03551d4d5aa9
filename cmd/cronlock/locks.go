package main

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/cronlock/cronlock/lock"
)

const locksUsage = `
Usage: cronlock locks [-c FILE] [--json]

Shows who holds which job's lock (kept in the job's record in the history
bucket) and any lock held in the lock bucket (the lock package's, or an
older release's): key (the job name), owner, fencing token, when it was
acquired, and how long until it expires unless renewed (for a job, its last
renewal plus lock.lease on the holder's clock). Free locks are not listed.

Flags:
  -c, --config FILE   configuration file (default $CRONLOCK_CONFIG, else cronlock.yaml)
  --json              print a JSON array of
                      {"key","owner","token","acquired_at","expires_at","expires_in_seconds"}
`

// lockJSON is one element of `locks --json`: a public format.
type lockJSON struct {
	Key              string    `json:"key"`
	Owner            string    `json:"owner"`
	Token            uint64    `json:"token"`
	AcquiredAt       time.Time `json:"acquired_at"`
	ExpiresAt        time.Time `json:"expires_at"`
	ExpiresInSeconds float64   `json:"expires_in_seconds"`
}

func (c *cli) locks(ctx context.Context, args []string) error {
	fs := c.newFlags("locks", locksUsage, true)
	asJSON := fs.Bool("json", false, "JSON output")
	if err := fs.parse(args, 0); err != nil {
		return err
	}
	ctx, cl, done, err := c.query(ctx, fs)
	if err != nil {
		return err
	}
	defer done()
	holders, err := cl.Locks(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	if *asJSON {
		out := make([]lockJSON, 0, len(holders))
		for _, h := range holders {
			out = append(out, lockJSON{
				Key: h.Key, Owner: h.Owner, Token: h.Token,
				AcquiredAt: h.AcquiredAt.UTC(), ExpiresAt: h.ExpiresAt.UTC(),
				ExpiresInSeconds: roundSeconds(h.ExpiresAt.Sub(now)),
			})
		}
		return writeJSON(c, out)
	}
	if len(holders) == 0 {
		fmt.Fprintln(c.stdout, "no lock is held")
		return nil
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tOWNER\tTOKEN\tACQUIRED\tEXPIRES IN")
	for _, h := range holders {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", h.Key, h.Owner, h.Token,
			h.AcquiredAt.UTC().Format(time.RFC3339), expiresIn(h, now))
	}
	return tw.Flush()
}

func expiresIn(h lock.Holder, now time.Time) string {
	d := h.ExpiresAt.Sub(now)
	if d <= 0 {
		return "expired"
	}
	return d.Round(100 * time.Millisecond).String()
}

// roundSeconds is d in seconds, to the millisecond.
func roundSeconds(d time.Duration) float64 {
	return float64(d.Round(time.Millisecond)) / float64(time.Second)
}

// writeJSON writes v indented, with a final newline.
func writeJSON(c *cli, v any) error {
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
