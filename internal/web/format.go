package web

import (
	"fmt"
	"math"
	"time"
)

// The page shows times in UTC, to the second, so replicas in different
// zones and the browser agree; assets/static/app.js formats identically.
const (
	timeLayout = "2006-01-02 15:04:05Z"
	// none is shown for an absent value.
	none = "—"
)

// formatTime renders t in UTC, or none for the zero time.
func formatTime(t time.Time) string {
	if t.IsZero() {
		return none
	}
	return t.UTC().Format(timeLayout)
}

// formatSeconds renders a duration in seconds compactly: "4.2s", "3m07s",
// "2h05m"; none for zero or less (not ended, or never ran).
func formatSeconds(sec float64) string {
	switch {
	case sec <= 0 || math.IsNaN(sec):
		return none
	case sec < 60:
		return fmt.Sprintf("%.1fs", sec)
	case sec < 3600:
		s := int(sec)
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	default:
		m := int(sec) / 60
		return fmt.Sprintf("%dh%02dm", m/60, m%60)
	}
}

// formatNext renders the next tick with how far away it is.
func formatNext(next, now time.Time) string {
	if next.IsZero() {
		return none
	}
	d := next.Sub(now).Seconds()
	if d < 1 {
		return formatTime(next) + " (due)"
	}
	return formatTime(next) + " (in " + formatSeconds(d) + ")"
}

// formatOffset renders a replica's clock offset, or none when unknown.
func formatOffset(sec *float64) string {
	if sec == nil {
		return none
	}
	ms := math.Round(*sec * 1000) // no "-0.000s" for a tiny negative offset
	if ms == 0 {
		ms = 0 // also turns -0 into +0
	}
	return fmt.Sprintf("%+.3fs", ms/1000)
}

// formatToken renders a fencing token, or none for 0 (no lock).
func formatToken(tok uint64) string {
	if tok == 0 {
		return none
	}
	return fmt.Sprint(tok)
}

// formatExit renders an exit code, or none when there was none.
func formatExit(code *int) string {
	if code == nil {
		return none
	}
	return fmt.Sprint(*code)
}
