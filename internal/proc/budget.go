package proc

import (
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// Defaults of the log budget, applied when the Command fields are zero.
// 100 lines a second per run keeps a flooding job far below journald's
// default rate limit (10,000 messages per 30 s for the whole service), so
// that cronlock's own lines are not dropped with the job's.
const (
	DefaultLogLinesPerSecond = 100
	DefaultLogBytesPerSecond = 64 << 10
	// budgetWindow is the period the budget is counted over.
	budgetWindow = time.Second
)

// budget limits how much of one run's output is logged, both streams
// together: per budgetWindow at most lines lines, and bytes bytes plus at
// most one line. The lines it refuses are counted and reported in one
// notice, "[... N lines not logged]", logged before the next line it lets
// through or, at the latest, when the run ends (flush). It only limits
// logging: the Tail still receives every byte. Safe for concurrent use.
type budget struct {
	lines, bytes int

	mu                   sync.Mutex
	start                time.Time // the current window's start
	usedLines, usedBytes int       // logged in the current window
	dropped              int       // refused since the last notice
}

func newBudget(lines, bytes int) *budget {
	return &budget{lines: lines, bytes: bytes}
}

// take reports whether a line of n bytes may be logged at now, and the
// number of refused lines to report first in a notice (0: none). The
// notice counts against the window's lines.
func (b *budget) take(now time.Time, n int) (ok bool, notice int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if now.Sub(b.start) >= budgetWindow {
		b.start, b.usedLines, b.usedBytes = now, 0, 0
	}
	if b.usedLines >= b.lines || b.usedBytes >= b.bytes {
		b.dropped++
		return false, 0
	}
	if b.dropped > 0 {
		notice, b.dropped = b.dropped, 0
		b.usedLines++
		if b.usedLines >= b.lines {
			b.dropped++ // the notice took the window's last line
			return false, notice
		}
	}
	b.usedLines++
	b.usedBytes += n
	return true, notice
}

// flush returns the refused lines not reported yet, and forgets them.
func (b *budget) flush() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := b.dropped
	b.dropped = 0
	return n
}

// logDropped logs the notice for n refused lines, if n > 0.
func logDropped(log *zerolog.Logger, n int) {
	if n > 0 {
		log.Warn().Int("lines_not_logged", n).Msg("[... " + strconv.Itoa(n) + " lines not logged]")
	}
}
