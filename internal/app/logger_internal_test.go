package app

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cronlock/cronlock/internal/config"
)

// The console format colours a terminal (a pseudo-terminal's master here)
// and nothing else: not a file, not a pipe or buffer.
func TestConsoleColoursOnlyATerminal(t *testing.T) {
	t.Parallel()
	file, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if isTerminal(file) || isTerminal(&bytes.Buffer{}) {
		t.Error("a file or a buffer is taken for a terminal")
	}
	if pty, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0); err == nil {
		defer pty.Close()
		if !isTerminal(pty) {
			t.Error("a pseudo-terminal is not taken for a terminal")
		}
	}
	log, err := NewLogger(config.Log{Level: "info", Format: "console"}, file)
	if err != nil {
		t.Fatal(err)
	}
	log.Info().Str("k", "v\x1b").Msg("hello\x1b[2J")
	b, _ := os.ReadFile(file.Name())
	if got := string(b); strings.Contains(got, "\x1b[") || !strings.Contains(got, "hello\uFFFD[2J") ||
		!strings.Contains(got, `k="v\x1b"`) {
		t.Errorf("console log in a file %q: want no colour, the message neutralised, the field quoted", got)
	}
}
