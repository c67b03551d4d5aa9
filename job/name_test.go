package job

import (
	"strings"
	"testing"
)

func TestValidateName(t *testing.T) {
	t.Parallel()
	valid := []string{
		"a",
		"backup",
		"reports.daily",
		"team-a.reports_v2.daily",
		"A.B.C",
		"0",
		strings.Repeat("x", MaxNameLen),
		strings.Repeat("ab.", 66) + "ab", // 200 bytes, 67 tokens
	}
	for _, name := range valid {
		if err := ValidateName(name); err != nil {
			t.Errorf("ValidateName(%q) = %v, want nil", name, err)
		}
	}

	invalid := []struct {
		name string
		want string // substring of the error
	}{
		{"", "empty"},
		{strings.Repeat("x", MaxNameLen+1), "longer than 200"},
		{".a", "empty token at byte 0"},
		{"a.", "empty token at byte 2"},
		{"a..b", "empty token at byte 2"},
		{".", "empty token"},
		{"a b", "character ' ' at byte 1"},
		{"a*", "character '*'"},
		{"a.>", "character '>'"},
		{"a/b", "character '/'"},
		{"a=b", "character '='"},
		{"héllo", "character 'é' at byte 1"},
		{"a\x00", `character '\x00'`},
		{"a\xff", "character '�'"},
	}
	for _, tc := range invalid {
		err := ValidateName(tc.name)
		if err == nil {
			t.Errorf("ValidateName(%q) = nil, want error", tc.name)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tc.want) {
			t.Errorf("ValidateName(%q) = %q, want it to contain %q", tc.name, msg, tc.want)
		}
		if !strings.HasPrefix(msg, "job name ") || !strings.Contains(msg, nameRule) {
			t.Errorf("ValidateName(%q) = %q, want it to name the name and state the rule", tc.name, msg)
		}
	}
}

func TestValidateNameLongNameIsShortenedInError(t *testing.T) {
	t.Parallel()
	err := ValidateName(strings.Repeat("x", 10000))
	if err == nil {
		t.Fatal("want error")
	}
	if n := len(err.Error()); n > 400 {
		t.Errorf("error is %d bytes long, want the name shortened: %s", n, err)
	}
	if !strings.Contains(err.Error(), "(10000 bytes)") {
		t.Errorf("error %q does not state the name's length", err)
	}
}
