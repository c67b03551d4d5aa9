package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/cronlock/cronlock/internal/app"
	"github.com/cronlock/cronlock/internal/config"
)

const jobsPutUsage = `
Usage: cronlock jobs put [-c FILE] [-f FILE|-] [--if-match REV]

Creates or replaces runtime jobs from FILE (default -, stdin): YAML or
JSON, one definition (a mapping) or a list of them under jobs:, with the
keys of a file job (name, schedule or schedules or at, timezone, timeout,
retries, ...) plus kind (a kind of the configuration file) and payload (a
JSON object, CRONLOCK_PAYLOAD). Every replica schedules them within a
second. Prints "put NAME revision N" for each.

Nothing is stored when a definition is bad (exit 2, FILE:LINE: field:
message), when one has the name of a job of the configuration file, or
when the new names would take the bucket over runtime_jobs.max_jobs
(exit 1). The definitions are then written concurrently: a NATS failure
part way leaves those written before it stored, and says how many.

Flags:
  -c, --config FILE   configuration file (default $CRONLOCK_CONFIG, else cronlock.yaml)
  -f FILE             the definitions (default -, stdin)
  --if-match REV      replace the one definition only if its stored revision is REV
`

// Bounds of jobs put.
const (
	// putTimeout bounds a whole put: 100,000 definitions take well under
	// a minute.
	putTimeout = 10 * time.Minute
	// putInFlight is how many writes a put has outstanding at once: a
	// round trip each would take minutes for a list of 100,000.
	putInFlight = 32
	// fromStdin is the -f that reads the standard input (named stdinName
	// in errors, as by import).
	fromStdin = "-"
)

func (c *cli) jobsPut(ctx context.Context, args []string) error {
	fs := c.newFlags("jobs put", jobsPutUsage, true)
	file := fs.String("f", fromStdin, "the definitions' file, - for stdin")
	ifMatch := fs.Uint64("if-match", 0, "the stored revision required")
	if err := fs.parse(args, 0); err != nil {
		return err
	}
	cfg, err := fs.load()
	if err != nil {
		return err
	}
	if err := jobsEnabled(cfg); err != nil {
		return err
	}
	input := *file
	if input == fromStdin {
		input = stdinName
	}
	defs, err := c.readDefinitions(cfg, *file, input)
	if err != nil {
		return err
	}
	if *ifMatch > 0 && len(defs) != 1 {
		return usagef("--if-match: %s holds %d definitions; it applies to one", input, len(defs))
	}
	if err := notFileJobs(cfg, input, defs); err != nil {
		return err
	}
	ctx, store, done, err := c.openJobStore(ctx, cfg, putTimeout)
	if err != nil {
		return err
	}
	defer done()
	if err := withinMaxJobs(ctx, cfg, store, defs); err != nil {
		return err
	}
	revs, err := putAll(ctx, store, defs, *ifMatch, userAtHost())
	w := bufio.NewWriter(c.stdout)
	for i, rev := range revs {
		if rev > 0 {
			fmt.Fprintf(w, "put %s revision %d\n", defs[i].Job.Name, rev)
		}
	}
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	return err
}

// readDefinitions reads and validates the definitions of file ("-":
// stdin), named input in errors; a bad one is a usage error, exit 2,
// printed INPUT:LINE: field: message.
func (c *cli) readDefinitions(cfg *config.Config, file, input string) ([]config.Definition, error) {
	var data []byte
	var err error
	if file == fromStdin {
		data, err = c.readStdin()
	} else {
		data, err = config.ReadFile(file)
	}
	var fe *config.FieldError
	switch {
	case errors.As(err, &fe):
		return nil, &usageError{err: err, configErr: true}
	case err != nil:
		return nil, usagef("%v", err)
	}
	defs, err := cfg.ParseDefinitions(input, data)
	if err != nil {
		return nil, &usageError{err: err, configErr: true}
	}
	if len(defs) == 0 {
		return nil, usagef("%s: no definition", input)
	}
	return defs, nil
}

// readStdin reads the standard input, up to config.MaxFileSize.
func (c *cli) readStdin() ([]byte, error) {
	if c.stdin == nil {
		return nil, nil
	}
	data, err := io.ReadAll(io.LimitReader(c.stdin, config.MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read stdin: %w", err)
	}
	if len(data) > config.MaxFileSize {
		return nil, &config.FieldError{File: stdinName, Msg: fmt.Sprintf("the input is too large: %v", config.ErrFileTooLarge)}
	}
	return data, nil
}

// notFileJobs refuses definitions that have the name of a job of the
// configuration file: names are unique across both sources.
func notFileJobs(cfg *config.Config, file string, defs []config.Definition) error {
	var errs []error
	for _, d := range defs {
		if fj, err := app.FindJob(cfg, d.Job.Name); err == nil {
			errs = append(errs, fmt.Errorf("%s:%d: name: %q is a job of the configuration file %s:%d",
				file, d.Job.Line, d.Job.Name, cfg.Path, fj.Line))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("nothing stored:\n%w", errors.Join(errs...))
	}
	return nil
}

// withinMaxJobs refuses a put whose new names would take the bucket over
// runtime_jobs.max_jobs. It counts the stored names once: puts by others
// at the same time may still take it a little over.
func withinMaxJobs(ctx context.Context, cfg *config.Config, store jobStore, defs []config.Definition) error {
	names, err := store.Names(ctx)
	if err != nil {
		return err
	}
	stored := make(map[string]bool, len(names))
	for _, n := range names {
		stored[n] = true
	}
	added := 0
	for _, d := range defs {
		if !stored[d.Job.Name] {
			added++
		}
	}
	if max := cfg.RuntimeJobs.MaxJobs; len(names)+added > max {
		return fmt.Errorf("nothing stored: %d new runtime jobs would make %d, over runtime_jobs.max_jobs %d (%d stored)",
			added, len(names)+added, max, len(names))
	}
	return nil
}

// putAll writes defs, putInFlight at a time, and returns each one's new
// revision (0 for one not written). It stops at the first error, and the
// error says how many were written.
func putAll(ctx context.Context, store jobStore, defs []config.Definition, ifMatch uint64, by string) ([]uint64, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	revs := make([]uint64, len(defs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(putInFlight, len(defs)) {
		wg.Go(func() {
			for i := range next {
				rev, err := store.Put(ctx, defs[i].Job.Name, defs[i].JSON, ifMatch, by)
				if err != nil {
					cancel(fmt.Errorf("job %q: %w", defs[i].Job.Name, err))
					continue
				}
				revs[i] = rev
			}
		})
	}
feed:
	for i := range defs {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	err := context.Cause(ctx)
	if err == nil {
		return revs, nil
	}
	written := 0
	for _, r := range revs {
		if r > 0 {
			written++
		}
	}
	if len(defs) == 1 {
		return revs, err
	}
	return revs, fmt.Errorf("%w (%d of %d definitions stored)", err, written, len(defs))
}
