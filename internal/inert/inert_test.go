package inert_test

import (
	"testing"

	"github.com/cronlock/cronlock/internal/inert"
)

func TestStringNeutralisesControlCharacters(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"plain text":         "plain text",
		"tab\tkept":          "tab\tkept",
		"\x1b[31mred\x1b[0m": "\uFFFD[31mred\uFFFD[0m",
		"over\rwrite":        "over\uFFFDwrite",
		"two\nlines":         "two\uFFFDlines",
		"c1 \u009b2J":        "c1 \uFFFD2J",
		"bad \xff byte":      "bad \uFFFD byte",
	} {
		if got := inert.String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
}
