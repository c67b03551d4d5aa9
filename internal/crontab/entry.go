package crontab

import (
	"regexp"
	"strings"
	"time"

	"github.com/cronlock/cronlock/job"
)

// fieldCount is the number of time fields of a cron entry.
const fieldCount = 5

// extraField matches a word made only of time-field characters: in the
// command's place it is a sixth time field (a year, or Quartz's seconds).
var extraField = regexp.MustCompile(`^[0-9*?,/-]+$`)

// entry converts a cron entry: time fields or an @-spec, the user with
// System, then the command.
func (c *converter) entry(n int, s string) *problem {
	var spec, note string
	var p *problem
	rest := s
	if strings.HasPrefix(s, "@") {
		var d string
		d, rest = cutWord(s)
		if spec, p = descriptorSpec(d); p != nil {
			return p
		}
	} else {
		words := make([]string, fieldCount)
		for i := range words {
			words[i], rest = cutWord(rest)
		}
		if words[fieldCount-1] == "" {
			return problemf("an entry is: minute hour day-of-month month day-of-week command",
				"not a cron entry or a NAME=value line")
		}
		if spec, p = fieldSpec(words); p != nil {
			return p
		}
		note = describe(strings.Join(words, " "), spec)
	}
	j := &jobOut{line: n, text: s, spec: spec, note: note}
	if c.opt.System {
		j.user, rest = cutWord(rest)
	}
	if p = c.command(j, rest); p != nil {
		return p
	}
	return c.finish(j)
}

// command sets j's command from the rest of the entry.
func (c *converter) command(j *jobOut, rest string) *problem {
	rest = strings.TrimLeft(rest, " \t")
	first, _ := cutWord(rest)
	switch {
	case c.opt.System && j.user == "":
		return problemf("an /etc/crontab entry is: minute hour day-of-month month day-of-week user command",
			"no user and no command")
	case c.opt.System && extraField.MatchString(j.user):
		return problemf("cron has five time fields; remove the extra one",
			"%q in place of the user looks like a sixth time field (a year, or Quartz's seconds)", j.user)
	case rest == "":
		return problemf("", "no command")
	case extraField.MatchString(first):
		return problemf("cron has five time fields; remove the extra one",
			"%q in place of the command looks like a sixth time field (a year, or Quartz's seconds)", first)
	}
	cmd, input, hasInput := splitPercent(rest)
	if strings.TrimSpace(cmd) == "" {
		return problemf("", "no command before '%%'")
	}
	j.shell = c.env["SHELL"]
	name := cmd
	if hasInput {
		sh := j.shell
		if sh == "" {
			sh = defaultShell
		}
		var p *problem
		if cmd, p = withInput(cmd, input, sh); p != nil {
			return p
		}
	}
	j.cmd, j.nameFrom = cmd, name
	return nil
}

// finish sets j's zone and environment and records it.
//
// The zone follows cronie: only CRON_TZ moves a schedule; TZ is an
// environment variable of the job like any other (cron reads the schedule
// in its own, the host's, zone). So the zone is CRON_TZ's, else the host's
// as given by Options.Timezone, else none (UTC, with a note).
func (c *converter) finish(j *jobOut) *problem {
	if c.zoneLine > 0 {
		return problemf("fix the time zone line", "the time zone set at line %d is unknown", c.zoneLine)
	}
	switch {
	case c.env["CRON_TZ"] != "":
		j.timezone, j.zoneSrc = c.env["CRON_TZ"], "CRON_TZ"
	case c.opt.Timezone != "":
		j.timezone, j.zoneSrc = c.opt.Timezone, "--timezone"
	}
	for _, k := range c.envOrder {
		if k != "CRON_TZ" { // scheduling only: it is the job's timezone now
			j.env = append(j.env, [2]string{k, c.env[k]})
		}
	}
	if p := checkSchedule(j); p != nil {
		return p
	}
	if tz, set := c.env["TZ"]; set {
		j.envTZ = &tz
	} else if c.opt.Timezone != "" {
		// The host's zone was also the commands' local time under cron
		// (date, logs), whatever CRON_TZ said; keep it so whatever zone
		// cronlock runs in.
		j.env = append(j.env, [2]string{"TZ", c.opt.Timezone})
		j.hostTZ = true
	}
	j.name = c.names.next(j.nameFrom)
	j.hostLocal = hostLocal(j.nameFrom)
	c.jobs = append(c.jobs, j)
	return nil
}

// checkSchedule makes sure cronlock accepts j's schedule, as `cronlock
// validate` will: it parses, and it fires (cron accepts "0 0 30 2 *" and
// never runs it).
func checkSchedule(j *jobOut) *problem {
	loc := time.UTC
	if j.timezone != "" {
		l, err := time.LoadLocation(j.timezone)
		if err != nil {
			return problemf(`use an IANA name such as "Europe/Berlin"`, "unknown time zone %q", j.timezone)
		}
		loc = l
	}
	s, err := job.ParseSchedule(j.spec, loc)
	if err != nil {
		return problemf("", "cronlock cannot read the converted schedule: %v", err)
	}
	if job.NeverFires(s) {
		return problemf("check the day-of-month and month fields",
			"schedule %q never fires: no calendar date matches its day and month fields (cron never runs it either)", j.spec)
	}
	return nil
}

// cutWord returns the first blank-separated word of s and the text after
// it (with its leading blanks).
func cutWord(s string) (word, rest string) {
	s = strings.TrimLeft(s, " \t")
	i := strings.IndexAny(s, " \t")
	if i < 0 {
		return s, ""
	}
	return s[:i], s[i:]
}
