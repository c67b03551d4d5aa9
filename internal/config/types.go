package config

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// Duration is a time.Duration written in YAML as a Go duration string
// ("20s", "1m30s", "500ms"). A bare integer is not accepted: its unit would
// be a guess.
type Duration time.Duration

// Duration returns d as a time.Duration.
func (d Duration) Duration() time.Duration { return time.Duration(d) }

// String formats d like time.Duration ("1m30s").
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText renders d as its String form, so JSON and YAML encodings of a
// Config show durations the way the file writes them.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// Secret is a string that does not print itself. Its String, Format,
// MarshalJSON, MarshalYAML and MarshalText forms are "[redacted]" when it is
// non-empty and "" when it is empty, whatever the fmt verb or flags; only
// Value returns the secret.
type Secret string

// Redacted is what a non-empty Secret prints instead of its value.
const Redacted = "[redacted]"

// Value returns the secret itself. Do not log it.
func (s Secret) Value() string { return string(s) }

// String returns Redacted, or "" for an empty Secret.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return Redacted
}

// Format implements fmt.Formatter so that every verb (%v, %+v, %#v, %s, %q,
// %x, ...) prints String() instead of the secret. Width and the '-' flag are
// honoured; %q quotes.
func (s Secret) Format(f fmt.State, verb rune) {
	out := s.String()
	if verb == 'q' {
		out = strconv.Quote(out)
	}
	if w, ok := f.Width(); ok && w > len(out) {
		pad := make([]byte, w-len(out))
		for i := range pad {
			pad[i] = ' '
		}
		if f.Flag('-') {
			out += string(pad)
		} else {
			out = string(pad) + out
		}
	}
	_, _ = f.Write([]byte(out))
}

// MarshalJSON encodes String().
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// MarshalYAML encodes String() (goccy/go-yaml and gopkg.in/yaml interface).
func (s Secret) MarshalYAML() (any, error) { return s.String(), nil }

// MarshalText encodes String().
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// FieldError is one problem in a configuration file.
type FieldError struct {
	File string // file name as given to Parse
	Line int    // 1-based line; 0 when unknown
	Path string // field path such as "jobs[1].schedule"; "" for YAML syntax errors
	Msg  string // what is wrong; never contains a Secret's value
	// err is what the problem is an instance of (ErrFileTooLarge,
	// ErrTooDeep), for errors.Is; nil for most problems.
	err error
}

// Unwrap returns the sentinel error e is an instance of, or nil.
func (e *FieldError) Unwrap() error { return e.err }

// Error formats e as "file:line: path: msg", leaving out the line when it
// is unknown and the path when it is empty.
func (e *FieldError) Error() string {
	s := e.File
	if e.Line > 0 {
		s += ":" + strconv.Itoa(e.Line)
	}
	s += ": "
	if e.Path != "" {
		s += e.Path + ": "
	}
	return s + e.Msg
}
