package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/cronlock/cronlock/internal/app"
	"github.com/cronlock/cronlock/internal/config"
	"github.com/cronlock/cronlock/internal/jobstore"
)

const jobsUsage = `
Usage: cronlock jobs <subcommand> [flags] [arguments]

Manages the runtime jobs: job definitions kept in NATS (the bucket
runtime_jobs.bucket) rather than in the configuration file. Every replica
follows the bucket and schedules them beside the file's jobs within a
second of a change. A runtime job names a kind of the configuration file
(kind: NAME) and may pass it a payload (CRONLOCK_PAYLOAD). They need
runtime_jobs: {enabled: true} in the configuration file.

Subcommands:
`

// jobsTrailer ends the usage of cronlock jobs, after the subcommands.
const jobsTrailer = `
Every subcommand takes -c FILE and --help (cronlock jobs put --help).
Flags come before arguments (cronlock jobs get --json NAME).

Exit codes: 0 ok; 1 a refused change (a file job's name, runtime_jobs.max_jobs,
a revision that differs, no such job), runtime jobs disabled, or NATS failed;
2 bad usage or a bad definition (FILE:LINE: field: message).
`

// jobsCommands are the subcommands of cronlock jobs, in the order its
// usage lists them.
var jobsCommands = []command{
	{"put", "create or replace runtime jobs from a YAML or JSON file (or stdin)", (*cli).jobsPut},
	{"get", "print a runtime job's definition, revision, and who put it when", (*cli).jobsGet},
	{"list", "list the runtime jobs by name, a page at a time", (*cli).jobsList},
	{"delete", "delete a runtime job (its revisions stay in its history)", (*cli).jobsDelete},
	{"history", "show a runtime job's kept revisions: who, when, what changed", (*cli).jobsHistory},
}

// jobsTimeout bounds the jobs subcommands other than put.
const jobsTimeout = queryTimeout

// jobs runs a subcommand of cronlock jobs.
func (c *cli) jobs(ctx context.Context, args []string) error {
	if len(args) == 0 {
		c.jobsUsage(c.stderr)
		return usagef("missing subcommand")
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		c.jobsUsage(c.stdout)
		return errHelp
	}
	for _, cmd := range jobsCommands {
		if cmd.name == args[0] {
			return cmd.run(c, ctx, args[1:])
		}
	}
	return usagef("unknown subcommand %q", args[0])
}

func (c *cli) jobsUsage(w io.Writer) {
	fmt.Fprint(w, strings.TrimLeft(jobsUsage, "\n"))
	for _, cmd := range jobsCommands {
		fmt.Fprintf(w, "  %-8s %s\n", cmd.name, cmd.summary)
	}
	fmt.Fprint(w, jobsTrailer)
}

// jobStore is a connection to NATS and the runtime jobs' store, for one
// jobs subcommand.
type jobStore struct {
	*jobstore.Store
	cl *app.Client
}

// openJobStore connects and opens the store of cfg, with a context that
// ends after timeout (no limit when 0) or at SIGINT/SIGTERM. With runtime
// jobs disabled it says how to enable them, without connecting. done
// closes the connection and releases the context.
func (c *cli) openJobStore(ctx context.Context, cfg *config.Config, timeout time.Duration) (context.Context, jobStore, func(), error) {
	if err := jobsEnabled(cfg); err != nil {
		return nil, jobStore{}, nil, err
	}
	ctx, cancel := operatorContext(ctx, timeout)
	cl, err := c.dial(ctx, cfg, false)
	if err != nil {
		cancel()
		return nil, jobStore{}, nil, err
	}
	done := func() { cl.Close(); cancel() }
	store, err := cl.JobStore(ctx)
	if err != nil {
		done()
		return nil, jobStore{}, nil, fmt.Errorf("open the runtime jobs' bucket %q: %w", cfg.RuntimeJobs.Bucket, err)
	}
	return ctx, jobStore{Store: store, cl: cl}, done, nil
}

// jobsEnabled is app.OpenJobStore's error when cfg disables runtime jobs
// (it says how to enable them), else nil. It needs no connection.
func jobsEnabled(cfg *config.Config) error {
	if cfg.RuntimeJobs.Enabled {
		return nil
	}
	_, err := app.OpenJobStore(context.Background(), nil, cfg)
	return err
}

// jobOrRuntime checks a JOB argument before connecting: a job of the
// configuration, or, with runtime jobs enabled, any name (loadRuntime
// checks it once connected). Else a usage error, exit 2.
func jobOrRuntime(cfg *config.Config, name string) error {
	if _, err := jobNamed(cfg, name); err != nil && !cfg.RuntimeJobs.Enabled {
		return err
	}
	return nil
}

// loadRuntime makes the runtime jobs called names (every one when names is
// empty) known to cl; a name neither the file nor the bucket has is a
// usage error, exit 2, as an unknown file job was.
func loadRuntime(ctx context.Context, cl *app.Client, names ...string) error {
	err := cl.LoadRuntimeJobs(ctx, names...)
	if errors.Is(err, app.ErrNoJob) {
		return usagef("%v", err)
	}
	return err
}

// errNoRuntimeJob is the error of a subcommand on a name the bucket has
// no definition of.
func errNoRuntimeJob(name string) error {
	return fmt.Errorf("no runtime job %q (cronlock jobs list lists them)", name)
}

// jobNameArg parses the flags and the single NAME argument of get, delete
// and history, and loads the configuration.
func jobNameArg(fs *flagSet, args []string) (string, *config.Config, error) {
	if err := fs.parse(args, 1); err != nil {
		return "", nil, err
	}
	if fs.NArg() != 1 {
		return "", nil, usagef("missing NAME")
	}
	cfg, err := fs.load()
	if err != nil {
		return "", nil, err
	}
	return fs.Arg(0), cfg, nil
}

const jobsGetUsage = `
Usage: cronlock jobs get [-c FILE] [--json] NAME

Prints the runtime job NAME's definition as stored (JSON), with its
revision, who put it (by) and when (at). Exit 1 when there is none.

Flags (before NAME):
  -c, --config FILE   configuration file (default $CRONLOCK_CONFIG, else cronlock.yaml)
  --json              print {"name", "revision", "by", "at", "definition"}
`

// storedJSON is a runtime job in the output of get --json and list --json:
// a public format.
type storedJSON struct {
	Name       string          `json:"name"`
	Revision   uint64          `json:"revision"`
	By         string          `json:"by"`
	At         time.Time       `json:"at"`
	Definition json.RawMessage `json:"definition"`
}

func toStoredJSON(st jobstore.Stored) storedJSON {
	return storedJSON{Name: st.Name, Revision: st.Revision, By: st.By, At: st.At.UTC(), Definition: st.Definition}
}

func (c *cli) jobsGet(ctx context.Context, args []string) error {
	fs := c.newFlags("jobs get", jobsGetUsage, true)
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
	st, err := store.Get(ctx, name)
	switch {
	case errors.Is(err, jobstore.ErrNotFound):
		return errNoRuntimeJob(name)
	case err != nil:
		return err
	case *asJSON:
		return writeJSON(c, toStoredJSON(st))
	}
	var def bytes.Buffer
	if err := json.Indent(&def, st.Definition, "", "  "); err != nil {
		def.Reset()
		def.Write(st.Definition)
	}
	fmt.Fprintf(c.stdout, "name:       %s\nrevision:   %d\nby:         %s\nat:         %s\ndefinition: %s\n",
		st.Name, st.Revision, dash(st.By), st.At.UTC().Format(time.RFC3339), def.String())
	return nil
}

const jobsDeleteUsage = `
Usage: cronlock jobs delete [-c FILE] [--if-match REV] NAME

Deletes the runtime job NAME: every replica stops scheduling it within a
second (a run in progress goes on). Its revisions stay in its history
(cronlock jobs history NAME), the delete with them, recording who.
Exit 1 when there is none, or with --if-match when the stored revision
differs.

Flags (before NAME):
  -c, --config FILE   configuration file (default $CRONLOCK_CONFIG, else cronlock.yaml)
  --if-match REV      delete only if the stored revision is REV
`

func (c *cli) jobsDelete(ctx context.Context, args []string) error {
	fs := c.newFlags("jobs delete", jobsDeleteUsage, true)
	ifMatch := fs.Uint64("if-match", 0, "the stored revision required")
	name, cfg, err := jobNameArg(fs, args)
	if err != nil {
		return err
	}
	ctx, store, done, err := c.openJobStore(ctx, cfg, jobsTimeout)
	if err != nil {
		return err
	}
	defer done()
	rev, err := store.Delete(ctx, name, *ifMatch, userAtHost())
	switch {
	case errors.Is(err, jobstore.ErrNotFound):
		return errNoRuntimeJob(name)
	case err != nil:
		return fmt.Errorf("job %q: %w", name, err)
	}
	fmt.Fprintf(c.stdout, "deleted %s revision %d\n", name, rev)
	return nil
}
