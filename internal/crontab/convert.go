package crontab

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Options control a conversion. The zero value converts a user's crontab
// and leaves jobs without CRON_TZ in UTC, with a note.
type Options struct {
	// Source names the crontab in errors and in the output's header; "" is
	// shown as "crontab".
	Source string
	// System reads the /etc/crontab format, whose entries have a user field
	// between the time fields and the command. Without it, a crontab in that
	// format is refused with a *SystemFormatError (see detectSystem).
	System bool
	// Timezone is the IANA zone of the entries without CRON_TZ: the zone
	// the host's cron ran them in (TZ= lines do not move a schedule under
	// cron). It is also the jobs' env TZ where the crontab sets none. ""
	// leaves them in UTC.
	Timezone string
}

// LineError is a crontab line that could not be converted.
type LineError struct {
	Source string
	Line   int // 1-based
	Reason string
	Hint   string // what to do instead; may be empty
}

// Error formats e as "SOURCE:LINE: reason (hint: ...)".
func (e *LineError) Error() string {
	s := fmt.Sprintf("%s:%d: %s", e.Source, e.Line, e.Reason)
	if e.Hint != "" {
		s += " (hint: " + e.Hint + ")"
	}
	return s
}

// Result is a conversion.
type Result struct {
	// YAML is the configuration with one job per converted entry; nil if no
	// entry converted.
	YAML []byte
	// Jobs is the number of converted entries.
	Jobs int
	// Errors lists the lines that could not be converted, in line order.
	Errors []*LineError
	// Notes are things the user must know about the output (also written in
	// its header), such as jobs left in UTC.
	Notes []string
	// LineNotes are things the user must know about converted lines (also
	// written above their jobs), such as host-local maintenance, in line
	// order.
	LineNotes []*LineNote
}

// LineNote is something the user must know about a converted line.
type LineNote struct {
	Source string
	Line   int // 1-based
	Job    string
	Text   string
}

// String formats n as "SOURCE:LINE: job NAME: text".
func (n *LineNote) String() string {
	return fmt.Sprintf("%s:%d: job %s: %s", n.Source, n.Line, n.Job, n.Text)
}

// Convert converts the crontab text. It returns an error only for bad
// Options and for a system crontab given without Options.System (a
// *SystemFormatError); problems with lines are in Result.Errors.
func Convert(text []byte, opt Options) (*Result, error) {
	if opt.Source == "" {
		opt.Source = "crontab"
	}
	if opt.Timezone != "" {
		if _, err := time.LoadLocation(opt.Timezone); err != nil {
			return nil, fmt.Errorf("time zone %q: %w", opt.Timezone, err)
		}
	}
	if !opt.System {
		if e := detectSystem(text, opt.Source); e != nil {
			return nil, e
		}
	}
	c := &converter{opt: opt, names: newNames(), env: map[string]string{}}
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(nil, len(text)+1)
	for n := 1; sc.Scan(); n++ {
		if p := c.line(n, sc.Text()); p != nil {
			c.errs = append(c.errs, &LineError{Source: opt.Source, Line: n, Reason: p.reason, Hint: p.hint})
		}
	}
	res := &Result{Jobs: len(c.jobs), Errors: c.errs, Notes: c.notes(), LineNotes: c.lineNotes()}
	if len(c.jobs) > 0 {
		res.YAML = c.render(res.Notes)
	}
	return res, nil
}

// converter holds the state of cron's reading of a crontab: the environment
// lines seen so far apply to the entries after them.
type converter struct {
	opt      Options
	names    *names
	env      map[string]string
	envOrder []string
	// zoneLine is the line of the CRON_TZ in effect if it is not a known
	// zone, else 0.
	zoneLine int
	jobs     []*jobOut
	errs     []*LineError
}

// jobOut is one converted entry.
type jobOut struct {
	line              int
	text              string
	name, spec, note  string
	nameFrom          string // the command the name is derived from
	user              string
	timezone, zoneSrc string
	envTZ             *string // the crontab's TZ, if it set one: env only
	hostTZ            bool    // env TZ is Options.Timezone, the host's zone
	hostLocal         string  // the host-local maintenance program run, or ""
	shell             string  // SHELL, or "" for cronlock's /bin/sh
	cmd               string
	env               [][2]string
}

// envLine matches NAME=value as cronie's load_env does: a name without
// whitespace or '=', optional blanks, '='.
var envLine = regexp.MustCompile(`^([^\s=]+)[ \t]*=(.*)$`)

// envName is a name a shell can export.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// line converts line n.
func (c *converter) line(n int, raw string) *problem {
	s := strings.TrimRight(strings.TrimLeft(raw, " \t"), "\r")
	switch {
	case s == "" || s[0] == '#':
		return nil
	case !utf8.ValidString(s):
		return problemf("save the crontab as UTF-8", "not valid UTF-8")
	case strings.IndexByte(s, 0) >= 0:
		return problemf("", "contains a NUL byte")
	}
	if m := envLine.FindStringSubmatch(s); m != nil {
		return c.setEnv(n, m[1], m[2])
	}
	return c.entry(n, s)
}

// setEnv records NAME=value for the entries after it.
func (c *converter) setEnv(n int, name, value string) *problem {
	if !envName.MatchString(name) {
		return problemf("names are letters, digits and '_', not starting with a digit",
			"environment line: %q is not a valid variable name", name)
	}
	v := strings.TrimSpace(value)
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		v = v[1 : len(v)-1]
	}
	// Only CRON_TZ is a schedule's zone (cronie); TZ is the job's
	// environment, kept as written, even empty.
	isZone := name == "CRON_TZ"
	if isZone {
		c.zoneLine = 0
	}
	if v == "" && isZone { // empty: back to the host's zone, as if unset
		delete(c.env, name)
		c.envOrder = slices.DeleteFunc(c.envOrder, func(k string) bool { return k == name })
		return nil
	}
	if _, seen := c.env[name]; !seen {
		c.envOrder = append(c.envOrder, name)
	}
	c.env[name] = v
	if isZone {
		if _, err := time.LoadLocation(v); err != nil {
			c.zoneLine = n
			return problemf(`use an IANA name such as "Europe/Berlin"`, "%s=%s: unknown time zone", name, v)
		}
	}
	return nil
}
