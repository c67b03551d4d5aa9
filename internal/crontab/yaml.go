package crontab

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// Notes of the output's header.
const (
	noteNATS = "Before running more than one replica, add a nats: section with the url of the NATS " +
		"server every replica shares; without it each replica starts its own embedded server and " +
		"they do not coordinate."
	noteUTC = "%d job(s) below have no timezone: cron ran them in the host's local time, but cronlock " +
		"reads schedules in UTC unless a job sets timezone. Add timezone: to them, or convert again " +
		"with --timezone ZONE."
	noteUsers = "cronlock does not switch users: every job runs as the user cronlock runs as. The user " +
		"each line named in /etc/crontab is in the job's comment."
	noteCronEnv = "cron mails a job's output (MAILTO) and starts it with a small environment (HOME, " +
		"LOGNAME, SHELL=/bin/sh, PATH=/usr/bin:/bin); cronlock logs the output and starts a job with " +
		"its own environment plus the job's env."
)

// notes returns what the user must know about the output.
func (c *converter) notes() []string {
	utc := 0
	for _, j := range c.jobs {
		if j.timezone == "" {
			utc++
		}
	}
	var out []string
	if utc > 0 {
		out = append(out, fmt.Sprintf(noteUTC, utc))
	}
	if c.opt.System && len(c.jobs) > 0 {
		out = append(out, noteUsers)
	}
	return out
}

// lineNotes returns what the user must know about the converted lines.
func (c *converter) lineNotes() []*LineNote {
	var out []*LineNote
	for _, j := range c.jobs {
		if j.hostLocal != "" {
			out = append(out, &LineNote{Source: c.opt.Source, Line: j.line, Job: j.name, Text: hostLocalNote(j.hostLocal)})
		}
	}
	return out
}

// commentWidth is where header comments are wrapped.
const commentWidth = 78

// render writes the configuration. It is deterministic (no dates): the
// same crontab and options give the same bytes.
func (c *converter) render(notes []string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# cronlock configuration converted by `cronlock import crontab` from %s.\n", commentText(c.opt.Source))
	b.WriteString("# Check it with `cronlock validate` and `cronlock next`.\n#\n")
	for _, n := range append(append([]string{noteNATS}, notes...), noteCronEnv) {
		writeWrapped(&b, "# - ", "#   ", n)
	}
	b.WriteString("jobs:\n")
	for _, j := range c.jobs {
		c.renderJob(&b, j)
	}
	return b.Bytes()
}

// renderJob writes j: its comments, then the job with every string quoted.
func (c *converter) renderJob(b *bytes.Buffer, j *jobOut) {
	c.renderComments(b, j)
	fmt.Fprintf(b, "  - name: %s\n", quoted(j.name))
	fmt.Fprintf(b, "    schedule: %s\n", quoted(j.spec))
	if j.timezone != "" {
		fmt.Fprintf(b, "    timezone: %s\n", quoted(j.timezone))
	}
	if j.shell != "" {
		fmt.Fprintf(b, "    command: [%s, \"-c\", %s]\n", quoted(j.shell), quoted(j.cmd))
	} else {
		fmt.Fprintf(b, "    shell: %s\n", quoted(j.cmd))
	}
	if j.hostLocal != "" {
		writeWrapped(b, "    # ", "    # ", hostLocalComment(j.hostLocal))
		fmt.Fprintf(b, "    run_on: %s\n", quoted("every_replica"))
	}
	if len(j.env) > 0 {
		b.WriteString("    env:\n")
		for _, kv := range j.env {
			fmt.Fprintf(b, "      %s: %s\n", quoted(kv[0]), quoted(kv[1]))
		}
	}
}

// renderComments writes the comment lines above j: where it comes from and
// what the user must know about it.
func (c *converter) renderComments(b *bytes.Buffer, j *jobOut) {
	fmt.Fprintf(b, "\n  # %s line %d: %s\n", commentText(c.opt.Source), j.line, commentText(j.text))
	if j.note != "" {
		fmt.Fprintf(b, "  # %s\n", commentText(j.note))
	}
	if j.user != "" {
		fmt.Fprintf(b, "  # cron ran this as user %s; cronlock runs it as its own user.\n", commentText(j.user))
	}
	if j.zoneSrc != "" {
		fmt.Fprintf(b, "  # timezone from %s.\n", j.zoneSrc)
	}
	if j.envTZ != nil && j.zoneSrc != "CRON_TZ" {
		writeWrapped(b, "  # ", "  # ", fmt.Sprintf("TZ=%s stays in env: it is the command's local time; "+
			"only CRON_TZ sets a schedule's zone.", commentText(quoted(*j.envTZ))))
	}
	if j.hostTZ {
		b.WriteString("  # env TZ from --timezone: the host's zone was also the command's local time.\n")
	}
}

// quoted writes s as a YAML double-quoted scalar, which YAML reads as that
// string whatever it says ("true", "no", "~", "1e3" are strings, never a
// boolean, null or number): the importer writes every string so. Go's
// escapes (\n, \t, \", \\, \xNN for control bytes, \uNNNN) are YAML
// escapes too; s is valid UTF-8, so \xNN only appears for code points below
// 0x80.
func quoted(s string) string { return strconv.Quote(s) }

// commentText makes s safe inside a one-line YAML comment: characters
// that are not graphic (control characters, and the line and paragraph
// separators some readers take for line breaks) become '?'.
func commentText(s string) string {
	return strings.Map(func(r rune) rune {
		if !unicode.IsGraphic(r) && r != '\t' {
			return '?'
		}
		return r
	}, s)
}

// writeWrapped writes text as comment lines of at most commentWidth
// columns, the first starting with first and the others with indent.
func writeWrapped(b *bytes.Buffer, first, indent, text string) {
	line := first
	for i, w := range strings.Fields(text) {
		if i > 0 && len(line)+1+len(w) > commentWidth {
			b.WriteString(line + "\n")
			line = indent + w
			continue
		}
		if i > 0 {
			line += " "
		}
		line += w
	}
	b.WriteString(line + "\n")
}
