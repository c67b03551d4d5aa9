package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"strings"

	"github.com/cronlock/cronlock/internal/crontab"
)

const importUsage = `
Usage: cronlock import crontab [-o FILE] [--system] [--timezone ZONE] CRONTAB

Converts a crontab (the file CRONTAB, or - for standard input) into a
cronlock configuration with one job per entry, and writes it to standard
output or to FILE. Each job's comment gives the crontab line it comes from.

  - Entries become shell: jobs, or command: [SHELL, -c, LINE] if the
    crontab sets SHELL. NAME=value lines become the env of the entries
    after them; CRON_TZ= or TZ= becomes timezone.
  - '%' keeps its cron meaning: the text after the first '%' is the
    command's standard input, further '%' are newlines, and \% is a '%'.
  - Every converted schedule runs at the times cron runs the entry,
    including cron's day-of-month/day-of-week rule.
  - Job names come from the commands and are made unique (backup,
    backup-2, ...).

Entries without CRON_TZ or TZ ran in the host's local time under cron, but
cronlock reads schedules in UTC: name the host's zone with --timezone, or
the output notes the jobs left in UTC.

Lines that cannot be converted (@reboot, the L, W, # and ? of other crons,
a year field, a day rule cronlock cannot express, malformed lines) are
reported on stderr, all of them, as CRONTAB:LINE: REASON (hint: ...). The
other lines are still written, and the exit code is 2.

Flags (before CRONTAB):
  -o FILE          write the configuration to FILE (mode 0600 if created,
                   as a crontab is private) instead of standard output
  --system         the crontab is /etc/crontab, with a user field before
                   the command; cronlock does not switch users
  --timezone ZONE  IANA time zone (e.g. Europe/Berlin) of the entries
                   without CRON_TZ or TZ
`

// maxCrontab bounds the size of a crontab read: real ones are a few KiB,
// and the bound keeps a mistaken argument (a disk image) cheap to reject.
const maxCrontab = 4 << 20

// stdinName is CRONTAB's name in messages when it is read from "-".
const stdinName = "stdin"

// importCrontab is `cronlock import crontab`.
func (c *cli) importCrontab(_ context.Context, args []string) error {
	fs := c.newFlags("import crontab", importUsage, false)
	out := fs.String("o", "", "output file")
	system := fs.Bool("system", false, "/etc/crontab format with a user field")
	zone := fs.String("timezone", "", "time zone of entries without CRON_TZ or TZ")
	switch {
	case len(args) == 0:
		return usagef("missing the format: cronlock import crontab [flags] CRONTAB")
	case args[0] == "crontab":
	case strings.HasPrefix(args[0], "-"):
		if err := fs.parse(args, -1); err != nil { // --help, or a bad flag
			return err
		}
		return usagef("flags come after the format: cronlock import crontab [flags] CRONTAB")
	default:
		return usagef("unknown format %q: cronlock imports crontabs (cronlock import crontab [flags] CRONTAB)", args[0])
	}
	if err := fs.parse(args[1:], 1); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("missing CRONTAB: a crontab file, or - for standard input")
	}
	text, name, err := c.readCrontab(fs.Arg(0))
	if err != nil {
		return err
	}
	res, err := crontab.Convert(text, crontab.Options{Source: name, System: *system, Timezone: *zone})
	if err != nil {
		return usagef("--timezone %q: unknown time zone; use an IANA name such as Europe/Berlin", *zone)
	}
	for _, e := range res.Errors {
		fmt.Fprintln(c.stderr, e)
	}
	if res.Jobs == 0 {
		if len(res.Errors) == 0 {
			return usagef("%s: no cron entries", name)
		}
		return &usageError{err: fmt.Errorf("cronlock import crontab: no line of %s could be converted; nothing written", name), configErr: true}
	}
	if err := c.writeConfig(*out, res.YAML); err != nil {
		return err
	}
	for _, n := range res.Notes {
		fmt.Fprintf(c.stderr, "cronlock import crontab: note: %s\n", n)
	}
	if len(res.Errors) > 0 {
		dest := *out
		if dest == "" {
			dest = "standard output"
		}
		return &usageError{err: fmt.Errorf("cronlock import crontab: %d line(s) of %s could not be converted; the %d other job(s) were written to %s",
			len(res.Errors), name, res.Jobs, dest), configErr: true}
	}
	return nil
}

// readCrontab reads the crontab at path ("-": standard input) and returns it
// with its name for messages.
func (c *cli) readCrontab(path string) ([]byte, string, error) {
	name, r := path, io.Reader(nil)
	if path == "-" {
		name, r = stdinName, c.stdin
		if r == nil {
			r = strings.NewReader("")
		}
	} else {
		f, err := os.Open(path)
		if errors.Is(err, iofs.ErrNotExist) {
			return nil, "", usagef("crontab %q not found", path)
		}
		if err != nil {
			return nil, "", err
		}
		defer f.Close()
		r = f
	}
	text, err := io.ReadAll(io.LimitReader(r, maxCrontab+1))
	if err != nil {
		return nil, "", fmt.Errorf("read %s: %w", name, err)
	}
	if len(text) > maxCrontab {
		return nil, "", usagef("%s: larger than %d bytes; is it a crontab?", name, maxCrontab)
	}
	return text, name, nil
}

// writeConfig writes data to path, or to standard output if path is "".
func (c *cli) writeConfig(path string, data []byte) error {
	if path == "" {
		_, err := c.stdout.Write(data)
		return err
	}
	const privateFile = 0o600
	if err := os.WriteFile(path, data, privateFile); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
