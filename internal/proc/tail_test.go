package proc_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/cronlock/cronlock/internal/proc"
)

func TestTail(t *testing.T) {
	for _, tc := range []struct {
		name   string
		n      int
		writes []string
		want   string
	}{
		{"off", 0, []string{"abc"}, ""},
		{"negative is off", -1, []string{"abc"}, ""},
		{"nothing written", 5, nil, ""},
		{"short", 5, []string{"ab", "cd"}, "abcd"},
		{"exactly n", 5, []string{"abc", "de"}, "abcde"},
		{"one long write", 5, []string{"abcdefg"}, "cdefg"},
		{"across writes", 5, []string{"abc", "defg"}, "cdefg"},
		{"past twice n", 3, []string{"ab", "cd", "ef", "gh", "ij", "k"}, "ijk"},
		{"long write after short ones", 3, []string{"a", "b", "cdefg"}, "efg"},
		{"empty writes", 3, []string{"", "abcd", ""}, "bcd"},
		// é is 2 bytes (c3 a9), € is 3 (e2 82 ac).
		{"cut after a two-byte rune's first byte", 4, []string{"aé€"}, "€"},
		{"cut inside a three-byte rune", 5, []string{"a€b€"}, "b€"},
		{"whole runes kept", 5, []string{"x€é"}, "€é"},
		{"only the end of a cut rune", 2, []string{"€"}, ""},
		{"not UTF-8 is kept", 5, []string{"a\x80\x80\x80\x80\x80"}, "\x80\x80\x80\x80\x80"},
		{"invalid start byte is kept", 3, []string{"a\xffbc"}, "\xffbc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tail := proc.NewTail(tc.n)
			for _, w := range tc.writes {
				if n, err := tail.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
			}
			if got := tail.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTailNil(t *testing.T) {
	var tail *proc.Tail
	if n, err := tail.Write([]byte("abc")); n != 3 || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if s := tail.String(); s != "" {
		t.Fatalf("String() = %q", s)
	}
}

// Concurrent writers: whole writes of at most n bytes are never torn.
func TestTailConcurrent(t *testing.T) {
	const n = 64
	tail := proc.NewTail(n)
	var wg sync.WaitGroup
	for _, c := range "abcd" {
		line := strings.Repeat(string(c), 7) + "\n"
		wg.Go(func() {
			for range 1000 {
				_, _ = tail.Write([]byte(line))
				_ = tail.String()
			}
		})
	}
	wg.Wait()
	s := tail.String()
	if len(s) != n {
		t.Fatalf("len %d, want %d", len(s), n)
	}
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for _, l := range lines[1:] { // the first is cut
		if len(l) != 7 || strings.Count(l, l[:1]) != 7 {
			t.Fatalf("torn line %q in %q", l, s)
		}
	}
}
