package app

import (
	"fmt"
	"io"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/config"
	"github.com/cronlock/cronlock/internal/inert"
)

// NewLogger returns the logger configured by c (level debug, info, warn or
// error; format json or console), writing to w. Writes are serialised, since
// job output is logged from several goroutines at once. config.Load has
// validated c already; an unknown level or format is an error naming the
// field rather than a silent default.
//
// The console format is for people: messages (job output lines among them)
// have their control characters neutralised as `cronlock status -v` does,
// so that a job's escape sequences cannot act on the terminal, and it is
// coloured only when w is a terminal. Field values are quoted by zerolog.
func NewLogger(c config.Log, w io.Writer) (zerolog.Logger, error) {
	level, err := zerolog.ParseLevel(c.Level)
	if err != nil || c.Level == "" {
		return zerolog.Nop(), fmt.Errorf("log.level: unknown level %q", c.Level)
	}
	sw := zerolog.SyncWriter(w)
	switch c.Format {
	case "json":
	case "console":
		sw = zerolog.SyncWriter(consoleWriter(w))
	default:
		return zerolog.Nop(), fmt.Errorf("log.format: unknown format %q, want json or console", c.Format)
	}
	return zerolog.New(sw).Level(level).With().Timestamp().Logger(), nil
}

// consoleWriter is the console format's writer to w.
func consoleWriter(w io.Writer) zerolog.ConsoleWriter {
	return zerolog.ConsoleWriter{
		Out:        w,
		TimeFormat: time.RFC3339,
		NoColor:    !isTerminal(w),
		FormatPrepare: func(evt map[string]any) error {
			if msg, ok := evt[zerolog.MessageFieldName].(string); ok {
				evt[zerolog.MessageFieldName] = inert.String(msg)
			}
			return nil
		},
	}
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}
