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
Usage: cronlock import crontab [-o FILE [--force]] [--system] [--timezone ZONE] CRONTAB

Converts a crontab (the file CRONTAB, or - for standard input) into a
cronlock configuration with one job per entry, and writes it to standard
output or to FILE. Each job's comment gives the crontab line it comes from.

  - Entries become shell: jobs, or command: [SHELL, -c, LINE] if the
    crontab sets SHELL. NAME=value lines become the env of the entries
    after them.
  - Only CRON_TZ= sets a schedule's timezone. TZ= does not move the
    schedule (as under cronie it is the command's local time): it stays
    in the job's env.
  - '%' keeps its cron meaning: the text after the first '%' is the
    command's standard input, further '%' are newlines, and \% is a '%'.
  - Every converted schedule runs at the times cron runs the entry,
    including cron's day-of-month/day-of-week rule.
  - Job names come from the commands and are made unique (backup,
    backup-2, ...). Every string is quoted, so a job named true or no
    stays a string.
  - Host-local maintenance (logrotate, certbot, run-parts, apt, dnf,
    updatedb, fstrim, find /tmp ... -delete, ...) is converted with a
    comment and a note on stderr: on several replicas such a job runs on
    one host per tick, which is seldom what the crontab meant.

Entries without CRON_TZ ran in the host's local time under cron, but
cronlock reads schedules in UTC: name the host's zone with --timezone (it
is also the jobs' env TZ where the crontab sets no TZ), or the output notes
the jobs left in UTC.

A crontab whose entries have a user field before the command
(/etc/crontab, /etc/cron.d/*) needs --system; without it, it is refused
with exit code 2.

Lines that cannot be converted (@reboot, the L, W, # and ? of other crons,
a year field, a day rule cronlock cannot express, malformed lines) are
reported on stderr, all of them, as CRONTAB:LINE: REASON (hint: ...). The
other lines are still written, and the exit code is 2.

Flags (before CRONTAB):
  -o FILE          write the configuration to FILE (mode 0600 if created,
                   as a crontab is private) instead of standard output; an
                   existing FILE is left as it is, and the exit code is 2
  --force          with -o, replace FILE if it exists
  --system         the crontab is /etc/crontab or in /etc/cron.d, with a
                   user field before the command; cronlock does not switch
                   users
  --timezone ZONE  IANA time zone (e.g. Europe/Berlin) of the entries
                   without CRON_TZ: the zone the host's cron ran in
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
	force := fs.Bool("force", false, "replace the output file if it exists")
	system := fs.Bool("system", false, "/etc/crontab format with a user field")
	zone := fs.String("timezone", "", "time zone of entries without CRON_TZ")
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
	if err := checkOutput(*out, *force); err != nil {
		return err
	}
	text, name, err := c.readCrontab(fs.Arg(0))
	if err != nil {
		return err
	}
	res, err := convertCrontab(text, crontab.Options{Source: name, System: *system, Timezone: *zone})
	if err != nil {
		return err
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
	if err := c.writeConfig(*out, *force, res.YAML); err != nil {
		return err
	}
	c.printNotes(res)
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

// convertCrontab converts text, turning Convert's errors into usage errors.
func convertCrontab(text []byte, opt crontab.Options) (*crontab.Result, error) {
	res, err := crontab.Convert(text, opt)
	var sys *crontab.SystemFormatError
	switch {
	case errors.As(err, &sys):
		return nil, &usageError{err: fmt.Errorf("cronlock import crontab: %w", err), configErr: true}
	case err != nil:
		return nil, usagef("--timezone %q: unknown time zone; use an IANA name such as Europe/Berlin", opt.Timezone)
	}
	return res, nil
}

// printNotes writes what the user must know about the output to stderr.
func (c *cli) printNotes(res *crontab.Result) {
	for _, n := range res.LineNotes {
		fmt.Fprintf(c.stderr, "cronlock import crontab: note: %s\n", n)
	}
	for _, n := range res.Notes {
		fmt.Fprintf(c.stderr, "cronlock import crontab: note: %s\n", n)
	}
}

// checkOutput refuses an output file that exists, unless force, before
// anything is read or written; writeConfig makes sure again when it
// creates the file.
func checkOutput(path string, force bool) error {
	if path == "" || force {
		return nil
	}
	if _, err := os.Lstat(path); err == nil {
		return errOutputExists(path)
	}
	return nil
}

func errOutputExists(path string) error {
	return usagef("-o %s: the file exists and is left as it is; add --force to replace it", path)
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
// Without force the file must not exist: it is created exclusively, so that
// a file that appeared since checkOutput is not overwritten either.
func (c *cli) writeConfig(path string, force bool, data []byte) error {
	if path == "" {
		_, err := c.stdout.Write(data)
		return err
	}
	const privateFile = 0o600
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(path, flags, privateFile)
	if errors.Is(err, iofs.ErrExist) {
		return errOutputExists(path)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if !force {
			os.Remove(path) // the file is ours: do not leave half a configuration
		}
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
