package notify

import (
	"bytes"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/cronlock/cronlock/internal/inert"
)

const (
	// maxSnippet bounds the part of a failed response's body that is
	// logged.
	maxSnippet = 200
	// mask replaces a configured secret echoed in a response.
	mask = "***"
	// minSecretWord is the shortest word of a header value that is masked
	// on its own too ("Bearer TOKEN" echoed as just "TOKEN").
	minSecretWord = 8
)

// masker turns what a webhook receiver answers into a short snippet safe to
// log: a receiver that echoes the request must not get the configured
// header values, the HMAC secret or the URL's credential into cronlock's
// log, nor its control characters onto an operator's terminal.
type masker struct {
	secrets []string // longest first, so that a value is masked whole
}

// newMasker masks each of values, and each of their words of at least
// minSecretWord bytes; empty values are ignored.
func newMasker(values ...string) masker {
	var m masker
	for _, v := range values {
		if v == "" {
			continue
		}
		m.secrets = append(m.secrets, v)
		for _, w := range strings.Fields(v) {
			if len(w) >= minSecretWord && w != v {
				m.secrets = append(m.secrets, w)
			}
		}
	}
	// Longest first: a word masked before its whole value would leave the
	// rest of the value showing.
	slices.SortFunc(m.secrets, func(a, b string) int { return len(b) - len(a) })
	return m
}

// mask returns b with every secret replaced by mask. With more, it stops
// where b ends inside a secret (b is the start of a longer text).
func (m masker) mask(b []byte, more bool) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		if s := m.secretAt(b[i:]); s != "" {
			out = append(out, mask...)
			i += len(s)
			continue
		}
		if more && m.partialAt(b[i:]) {
			break
		}
		out = append(out, b[i])
		i++
	}
	return out
}

// secretAt returns the secret b starts with, the longest one, or "".
func (m masker) secretAt(b []byte) string {
	for _, s := range m.secrets {
		if bytes.HasPrefix(b, []byte(s)) {
			return s
		}
	}
	return ""
}

// partialAt reports whether b is a proper prefix of a secret.
func (m masker) partialAt(b []byte) bool {
	for _, s := range m.secrets {
		if len(b) < len(s) && strings.HasPrefix(s, string(b)) {
			return true
		}
	}
	return false
}

// longest is the length of the longest secret, 0 if none: a response must be
// read that much past maxSnippet for a secret that starts inside the
// snippet to be seen whole, and masked.
func (m masker) longest() int {
	if len(m.secrets) == 0 {
		return 0
	}
	return len(m.secrets[0])
}

// snippet returns b with every secret masked, trimmed, cut to maxSnippet
// bytes (at a UTF-8 boundary, "…" marking the cut) and inert. more reports
// that b is only the start of the text: a secret b ends inside of is then
// left out, not shown in part.
func (m masker) snippet(b []byte, more bool) string {
	b = bytes.TrimSpace(m.mask(b, more))
	cut := len(b) > maxSnippet
	if cut {
		n := maxSnippet
		for n > 0 && !utf8.RuneStart(b[n]) {
			n--
		}
		b = b[:n]
	}
	s := inert.String(string(b))
	if cut {
		s += "…"
	}
	return s
}
