// Package inert makes text that cronlock did not write (a job's output, a
// webhook receiver's response) safe to show on a terminal or in a log: its
// control characters, tab excepted, become U+FFFD, so that escape sequences
// and carriage returns in it cannot act on the operator's terminal or
// rewrite what is shown before them.
//
// It owns that one rule, shared by `cronlock status -v`, the console log and
// the notify log lines. It must not know where the text goes.
package inert

import (
	"strings"
	"unicode"
)

// Rune returns r, or U+FFFD if r is a control character other than tab.
func Rune(r rune) rune {
	if r != '\t' && unicode.IsControl(r) {
		return unicode.ReplacementChar
	}
	return r
}

// String returns s with every rune mapped by Rune. Bytes that are not UTF-8
// become U+FFFD too.
func String(s string) string {
	return strings.Map(Rune, s)
}
