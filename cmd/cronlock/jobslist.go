package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/cronlock/cronlock/internal/jobstore"
)

const jobsListUsage = `
Usage: cronlock jobs list [-c FILE] [--json] [--limit N] [--after NAME]

Lists the runtime jobs sorted by name, up to --limit of them, with each
one's revision, who put it (by) and when (at). When more follow, the last
line (on stderr) says the --after that lists the next page.

Flags:
  -c, --config FILE   configuration file (default $CRONLOCK_CONFIG, else cronlock.yaml)
  --limit N           jobs per page (default 100, at most 10000)
  --after NAME        list the jobs whose names sort after NAME
  --json              print {"jobs": [{"name", "revision", "by", "at", "definition"}],
                      "next_after": NAME}; next_after is there when more follow
`

// Bounds of jobs list.
const (
	listDefault = 100
	listMax     = 10_000
)

// listJSON is the output of jobs list --json: a public format.
type listJSON struct {
	Jobs      []storedJSON `json:"jobs"`
	NextAfter string       `json:"next_after,omitempty"`
}

func (c *cli) jobsList(ctx context.Context, args []string) error {
	fs := c.newFlags("jobs list", jobsListUsage, true)
	asJSON := fs.Bool("json", false, "JSON output")
	limit := fs.Int("limit", listDefault, "jobs per page")
	after := fs.String("after", "", "list the jobs after this name")
	if err := fs.parse(args, 0); err != nil {
		return err
	}
	if *limit < 1 || *limit > listMax {
		return usagef("--limit %d: must be from 1 to %d", *limit, listMax)
	}
	cfg, err := fs.load()
	if err != nil {
		return err
	}
	ctx, store, done, err := c.openJobStore(ctx, cfg, jobsTimeout)
	if err != nil {
		return err
	}
	defer done()
	names, err := store.Names(ctx)
	if err != nil {
		return err
	}
	from := sort.Search(len(names), func(i int) bool { return names[i] > *after })
	page := names[from:min(from+*limit, len(names))]
	out := listJSON{Jobs: []storedJSON{}}
	if from+len(page) < len(names) {
		out.NextAfter = page[len(page)-1]
	}
	stored, err := getAll(ctx, store, page)
	if err != nil {
		return err
	}
	for _, st := range stored {
		out.Jobs = append(out.Jobs, toStoredJSON(st))
	}
	if *asJSON {
		return writeJSON(c, out)
	}
	return c.writeList(out)
}

// getAll reads the definitions of names (GetMany), in that order; one
// deleted since the listing is left out.
func getAll(ctx context.Context, store jobStore, names []string) ([]jobstore.Stored, error) {
	got, errs := store.GetMany(ctx, names)
	out := got[:0]
	for i, st := range got {
		switch {
		case errors.Is(errs[i], jobstore.ErrNotFound):
		case errs[i] != nil:
			return nil, fmt.Errorf("runtime job %q: %w", names[i], errs[i])
		default:
			out = append(out, st)
		}
	}
	return out, nil
}

func (c *cli) writeList(l listJSON) error {
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tREVISION\tBY\tAT")
	for _, j := range l.Jobs {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", j.Name, j.Revision, dash(j.By), j.At.Format(time.RFC3339))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if l.NextAfter != "" {
		fmt.Fprintf(c.stderr, "more follow: cronlock jobs list --after %s\n", l.NextAfter)
	}
	return nil
}
