package crontab

import (
	"path"
	"strconv"
	"strings"
)

// splitPercent splits a cron command the way cron does before running it
// (cronie's do_command.c): the first '%' not preceded by a backslash ends
// the command and starts its standard input, in which every further such
// '%' is a newline; "\%" stands for '%' in both parts, and other backslashes
// are kept. Cron ends non-empty input with a newline if it lacks one.
// hasInput reports whether there was a '%'.
func splitPercent(line string) (cmd, input string, hasInput bool) {
	var b strings.Builder
	escaped := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case escaped:
			if c != '%' {
				b.WriteByte('\\')
			}
			b.WriteByte(c)
			escaped = false
		case c == '\\':
			escaped = true
		case c == '%':
			return b.String(), cronInput(line[i+1:]), true
		default:
			b.WriteByte(c)
		}
	}
	if escaped {
		b.WriteByte('\\')
	}
	return b.String(), "", false
}

// cronInput turns the text after the first '%' into the bytes cron writes
// to the command's standard input.
func cronInput(rest string) string {
	var b strings.Builder
	escaped := false
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		switch {
		case escaped:
			if c != '%' {
				b.WriteByte('\\')
			}
			if c == '\\' {
				continue // still escaped: cron holds it back for the next byte
			}
			b.WriteByte(c)
			escaped = false
		case c == '\\':
			escaped = true
		case c == '%':
			b.WriteByte('\n')
		default:
			b.WriteByte(c)
		}
	}
	if escaped {
		b.WriteByte('\\')
	}
	out := b.String()
	if out != "" && !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	return out
}

// heredocShells are the shells (by base name) whose -c accepts a POSIX
// here-document, which carries a command's '%' input.
var heredocShells = map[string]bool{
	"sh": true, "bash": true, "dash": true, "ksh": true, "mksh": true,
	"zsh": true, "ash": true, "busybox": true, "yash": true,
}

// defaultShell is the shell cron runs commands with when SHELL is not set,
// and the one cronlock runs `shell:` jobs with.
const defaultShell = "/bin/sh"

// heredocDelim is the delimiter of the here-document that carries a
// command's '%' input; a number is appended if a line of the input equals
// it.
const heredocDelim = "CRONLOCK_INPUT"

// withInput returns a shell command line that runs cmd with input on its
// standard input: a here-document around a brace group, so that all of cmd
// (even "a; b") reads it, as under cron. A quoted delimiter keeps the input
// literal.
func withInput(cmd, input, shell string) (string, *problem) {
	if !heredocShells[path.Base(shell)] {
		return "", problemf("write the input to a file and redirect it (< FILE) in the command",
			"the text after '%%' is the command's input, and SHELL=%s may not accept the here-document that would carry it", shell)
	}
	if input == "" { // cron gives an empty, closed input: so does cronlock
		return cmd, nil
	}
	delim := heredocDelim
	lines := strings.Split(strings.TrimSuffix(input, "\n"), "\n")
	for n := 2; containsLine(lines, delim); n++ {
		delim = heredocDelim + "_" + strconv.Itoa(n)
	}
	return "{\n" + cmd + "\n} <<'" + delim + "'\n" + input + delim, nil
}

func containsLine(lines []string, s string) bool {
	for _, l := range lines {
		if l == s {
			return true
		}
	}
	return false
}
