package app

import (
	"log"
	"strings"

	"github.com/rs/zerolog"
)

// httpErrorLog is an http.Server's ErrorLog that writes each line the
// server logs (accept errors, TLS handshake errors, panics in handlers) as
// one entry of log, at warn, so that the daemon's log stays JSON (or
// console) throughout. A TLS handshake that ends before it starts (EOF: a
// load balancer's TCP check, a port scan) is logged at debug.
func httpErrorLog(l zerolog.Logger) *log.Logger {
	return log.New(zerologLines{log: l}, "", 0)
}

// zerologLines is an io.Writer taking the lines of a log.Logger.
type zerologLines struct{ log zerolog.Logger }

func (z zerologLines) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		level := zerolog.WarnLevel
		if strings.HasPrefix(line, "http: TLS handshake error") && strings.HasSuffix(line, ": EOF") {
			level = zerolog.DebugLevel
		}
		z.log.WithLevel(level).Msg(line)
	}
	return len(p), nil
}
