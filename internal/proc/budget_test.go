//go:build linux

package proc_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/proc"
)

// floodMB is how much a flooding test job writes: enough to be a flood
// (hundreds of thousands of lines), small enough to stay quick under -race.
var floodMB = envInt("PROC_FLOOD_MB", 15)

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// A job writing as fast as it can is logged within its budget, with notices
// accounting for every line left out, and its kept tail is complete.
func TestLogBudgetFlood(t *testing.T) {
	noLeaks(t)
	for _, c := range []struct {
		name         string
		lines, bytes int
	}{
		{"lines", 30, 1 << 20},
		{"bytes", 1000, 3000},
	} {
		t.Run(c.name, func(t *testing.T) { testFlood(t, c.lines, c.bytes) })
	}
}

func testFlood(t *testing.T, lines, bytes int) {
	const lineLen = 100
	total := floodMB << 20 / lineLen
	log, buf := logged()
	tail := proc.NewTail(4096)
	start := time.Now()
	err := proc.Command{
		Shell: fmt.Sprintf(`yes %s | head -n %d; echo last 1; echo last 2; echo last 3`,
			strings.Repeat("a", lineLen-1), total),
		LogLinesPerSecond: lines,
		LogBytesPerSecond: bytes,
		Logger:            log,
		Tail:              tail,
	}.Run(context.Background(), nil)
	elapsed := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	notice := regexp.MustCompile(`^\[\.\.\. (\d+) lines not logged\]$`)
	var logged, loggedBytes, dropped, notices int
	for _, e := range buf.entries(t) {
		if m := notice.FindStringSubmatch(e.Message); m != nil && e.Stream == "" {
			n, _ := strconv.Atoi(m[1])
			dropped += n
			notices++
			continue
		}
		logged++
		loggedBytes += len(e.Message)
	}
	windows := int(elapsed/time.Second) + 1
	t.Logf("%d MB, %d lines in %v: %d lines (%d bytes) logged, %d notices, %d not logged",
		floodMB, total+3, elapsed.Round(time.Millisecond), logged, loggedBytes, notices, dropped)
	// The notice at the end of the run comes on top of the budget.
	if logged+notices > lines*windows+1 || loggedBytes > (bytes+lineLen)*windows {
		t.Errorf("%d lines (%d notices), %d bytes logged in %d s: over the budget of %d lines and %d bytes a second",
			logged+notices, notices, loggedBytes, windows, lines, bytes)
	}
	if logged+dropped != total+3 || notices == 0 {
		t.Errorf("%d lines logged + %d reported not logged = %d, want the %d written", logged, dropped, logged+dropped, total+3)
	}
	if s := tail.String(); len(s) != 4096 || !strings.HasSuffix(s, "\n"+strings.Repeat("a", lineLen-1)+"\nlast 1\nlast 2\nlast 3\n") {
		t.Errorf("tail %d bytes ending %q: want 4096 ending with the last lines", len(s), s[max(len(s)-3*lineLen, 0):])
	}
}

func TestLogBudgetNegativeIsAnError(t *testing.T) {
	err := proc.Command{Shell: "true", LogLinesPerSecond: -1}.Run(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), "negative log budget") {
		t.Fatalf("Run: %v, want a negative log budget error", err)
	}
}
