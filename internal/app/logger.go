package app

import (
	"fmt"
	"io"
	"time"

	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/config"
)

// NewLogger returns the logger configured by c (level debug, info, warn or
// error; format json or console), writing to w. Writes are serialised, since
// job output is logged from several goroutines at once. config.Load has
// validated c already; an unknown level or format is an error naming the
// field rather than a silent default.
func NewLogger(c config.Log, w io.Writer) (zerolog.Logger, error) {
	level, err := zerolog.ParseLevel(c.Level)
	if err != nil || c.Level == "" {
		return zerolog.Nop(), fmt.Errorf("log.level: unknown level %q", c.Level)
	}
	sw := zerolog.SyncWriter(w)
	switch c.Format {
	case "json":
	case "console":
		sw = zerolog.SyncWriter(zerolog.ConsoleWriter{Out: w, TimeFormat: time.RFC3339})
	default:
		return zerolog.Nop(), fmt.Errorf("log.format: unknown format %q, want json or console", c.Format)
	}
	return zerolog.New(sw).Level(level).With().Timestamp().Logger(), nil
}
