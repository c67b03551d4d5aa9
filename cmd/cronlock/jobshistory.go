package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cronlock/cronlock/internal/jobstore"
)

const jobsHistoryUsage = `
Usage: cronlock jobs history [-c FILE] [--json] NAME

Shows the kept revisions of the runtime job NAME (the last 10), oldest
first: the revision, put or delete, who (by) and when (at), and what a put
changed against the revision before it: the top-level keys of the
definition added, removed and changed ("created" for a put with no
definition before it; nothing for the oldest kept revision when older ones
were dropped). Exit 1 when NAME has no revisions.

Flags (before NAME):
  -c, --config FILE   configuration file (default $CRONLOCK_CONFIG, else cronlock.yaml)
  --json              print {"name", "revisions": [{"revision", "operation", "by", "at",
                      "created", "added", "removed", "changed", "definition"}]}
`

// historyJSON is the output of jobs history --json: a public format.
type historyJSON struct {
	Name      string         `json:"name"`
	Revisions []revisionJSON `json:"revisions"`
}

// revisionJSON is one revision: Operation is "put" or "delete". A put
// has Created (no definition before it) or the keys Added, Removed and
// Changed against the one before; the oldest kept put has neither when
// older revisions were dropped.
type revisionJSON struct {
	Revision   uint64          `json:"revision"`
	Operation  string          `json:"operation"`
	By         string          `json:"by"`
	At         time.Time       `json:"at"`
	Created    bool            `json:"created,omitempty"`
	Added      []string        `json:"added,omitempty"`
	Removed    []string        `json:"removed,omitempty"`
	Changed    []string        `json:"changed,omitempty"`
	Definition json.RawMessage `json:"definition,omitempty"`
}

func (c *cli) jobsHistory(ctx context.Context, args []string) error {
	fs := c.newFlags("jobs history", jobsHistoryUsage, true)
	asJSON := fs.Bool("json", false, "JSON output")
	name, cfg, err := jobNameArg(fs, args)
	if err != nil {
		return err
	}
	ctx, store, done, err := c.openJobStore(ctx, cfg, jobsTimeout)
	if err != nil {
		return err
	}
	defer done()
	revs, err := store.Revisions(ctx, name)
	switch {
	case errors.Is(err, jobstore.ErrNotFound):
		return fmt.Errorf("runtime job %q has no revisions (cronlock jobs list lists the runtime jobs)", name)
	case err != nil:
		return err
	}
	h := historyJSON{Name: name, Revisions: diffRevisions(revs, len(revs) < jobstore.History)}
	if *asJSON {
		return writeJSON(c, h)
	}
	return c.writeHistory(h)
}

// diffRevisions says what each revision changed. complete: revs starts at
// the key's first revision (none was dropped).
func diffRevisions(revs []jobstore.Revision, complete bool) []revisionJSON {
	out := make([]revisionJSON, 0, len(revs))
	var prev map[string]json.RawMessage // the definition before, nil after a delete
	known := complete                   // whether prev is what was stored before
	for _, r := range revs {
		rj := revisionJSON{Revision: r.Revision, Operation: r.Operation, By: r.By, At: r.At.UTC(), Definition: r.Definition}
		if r.Operation != "put" {
			out = append(out, rj)
			prev, known = nil, true
			continue
		}
		var cur map[string]json.RawMessage
		if json.Unmarshal(r.Definition, &cur) != nil {
			cur = nil // not an object: nothing to compare
		}
		switch {
		case known && prev == nil:
			rj.Created = true
		case known:
			rj.Added, rj.Removed, rj.Changed = diffKeys(prev, cur)
		}
		out = append(out, rj)
		prev, known = cur, cur != nil
	}
	return out
}

// diffKeys compares two definitions' top-level keys, each list sorted.
func diffKeys(prev, cur map[string]json.RawMessage) (added, removed, changed []string) {
	for _, k := range slices.Sorted(maps.Keys(cur)) {
		old, ok := prev[k]
		switch {
		case !ok:
			added = append(added, k)
		case !jsonEqual(old, cur[k]):
			changed = append(changed, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(prev)) {
		if _, ok := cur[k]; !ok {
			removed = append(removed, k)
		}
	}
	return added, removed, changed
}

// jsonEqual compares two JSON values ignoring insignificant white space.
func jsonEqual(a, b json.RawMessage) bool {
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}

func (c *cli) writeHistory(h historyJSON) error {
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REVISION\tOPERATION\tBY\tAT\tCHANGES")
	for _, r := range h.Revisions {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", r.Revision, r.Operation, dash(r.By), r.At.Format(time.RFC3339), changes(r))
	}
	return tw.Flush()
}

// changes is the CHANGES column of a revision.
func changes(r revisionJSON) string {
	if r.Created {
		return "created"
	}
	var parts []string
	for _, p := range []struct {
		what string
		keys []string
	}{{"added", r.Added}, {"removed", r.Removed}, {"changed", r.Changed}} {
		if len(p.keys) > 0 {
			parts = append(parts, p.what+" "+strings.Join(p.keys, ", "))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, "; ")
}
