//go:build linux

package proc_test

import (
	"context"
	"strings"
	"testing"

	"github.com/cronlock/cronlock/internal/proc"
)

// Stdin reaches the job whole, even when larger than a pipe's buffer, and a
// job that does not read it still ends.
func TestStdin(t *testing.T) {
	noLeaks(t)
	in := []byte(strings.Repeat("0123456789", 100_000)) // 1 MB
	tail := proc.NewTail(64)
	if err := (proc.Command{Shell: "wc -c", Stdin: in, Tail: tail}).Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(tail.String()); got != "1000000" {
		t.Errorf("the job read %q bytes of stdin, want 1000000", got)
	}
	if err := (proc.Command{Shell: "true", Stdin: in}).Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
}
