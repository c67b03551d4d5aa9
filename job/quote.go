package job

import "strconv"

// maxQuoted bounds how much of a caller-supplied string an error message
// repeats, so that a megabyte of garbage in a config file does not become a
// megabyte log line.
const maxQuoted = 80

// quote returns s as a Go-quoted string for error messages, shortened to
// maxQuoted bytes (with an ellipsis and the full length) when longer.
func quote(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:maxQuoted]+"…") + " (" + strconv.Itoa(len(s)) + " bytes)"
}
