package job

import (
	"fmt"
	"unicode/utf8"
)

// MaxNameLen is the maximum length of a job name in bytes. Valid names are
// ASCII, so this is also the maximum number of characters. It leaves room
// under NATS' practical key-length limits for the prefixes and suffixes the
// history bucket adds around the name.
const MaxNameLen = 200

// nameRule is appended to every name error so that the message alone tells
// the user how to fix the name.
const nameRule = "a job name is 1 to 200 characters: tokens separated by '.', " +
	"each token non-empty and made only of A-Z, a-z, 0-9, '_' and '-'"

// ValidateName reports whether name can be a job name. The name is used
// verbatim as a NATS KV key (lock bucket) and inside KV keys of a history
// bucket, so: 1..200 characters, tokens separated by '.', each token
// non-empty and made of [A-Za-z0-9_-]. The error names the offending name and
// states the rule.
//
// The rule is deliberately stricter than what NATS KV accepts ('/' and '='
// are legal there): it excludes the subject wildcards '*' and '>', spaces and
// anything that would need escaping in a subject, a log line or a metric
// label, and it keeps a name meaningful as a prefix of longer keys.
func ValidateName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("job name %s: empty; %s", quote(name), nameRule)
	case len(name) > MaxNameLen:
		return fmt.Errorf("job name %s: longer than %d characters; %s", quote(name), MaxNameLen, nameRule)
	}
	tokenStart := 0
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '.':
			if i == tokenStart {
				return fmt.Errorf("job name %s: empty token at byte %d (leading, trailing or doubled '.'); %s",
					quote(name), i, nameRule)
			}
			tokenStart = i + 1
		case nameByte(c):
		default:
			r, _ := utf8.DecodeRuneInString(name[i:])
			return fmt.Errorf("job name %s: character %q at byte %d is not allowed; %s",
				quote(name), r, i, nameRule)
		}
	}
	if tokenStart == len(name) {
		return fmt.Errorf("job name %s: empty token at byte %d (leading, trailing or doubled '.'); %s",
			quote(name), len(name), nameRule)
	}
	return nil
}

// nameByte reports whether c may appear inside a token of a job name.
func nameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}
