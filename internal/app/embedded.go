package app

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/config"
)

// embeddedReady bounds the embedded server's start, JetStream recovery of a
// large store included.
const embeddedReady = 30 * time.Second

// embeddedServer is nats-server running in this process with JetStream,
// holding the lock on its store directory.
type embeddedServer struct {
	srv   *server.Server
	store *storeLock
	// token is what its clients must present (nats.embedded.auth), or "".
	token string
}

// startEmbedded locks e.StoreDir and starts nats-server on it, named as
// serverName says. With e.Listen empty the server opens no client port and
// is reachable only in-process; else it accepts clients on e.Listen
// (host:port). With e.Cluster in use it is a node of that cluster. The
// store lock is held until shutdown.
func startEmbedded(e config.Embedded, log zerolog.Logger) (*embeddedServer, error) {
	storeDir, listen := e.StoreDir, e.Listen
	if storeDir == "" {
		return nil, errors.New("nats.embedded.store_dir: must not be empty for the embedded server")
	}
	store, err := lockStore(storeDir)
	if err != nil {
		return nil, err
	}
	opts := &server.Options{
		ServerName: serverName(e),
		JetStream:  true,
		StoreDir:   storeDir,
		NoSigs:     true, // cronlock handles its own signals
		DontListen: listen == "",
		// nats.embedded.auth: every client, in-process ones included,
		// presents the token; routes between cluster nodes are not clients.
		Authorization: e.Auth.Token.Value(),
	}
	if e.Cluster.InUse() {
		if err := configureCluster(opts, e.Cluster); err != nil {
			store.release()
			return nil, err
		}
	}
	if listen != "" {
		host, port, err := net.SplitHostPort(listen)
		if err != nil {
			store.release()
			return nil, fmt.Errorf("nats.embedded.listen %q: %w", listen, err)
		}
		opts.Host = host
		if opts.Port, err = strconv.Atoi(port); err != nil {
			store.release()
			return nil, fmt.Errorf("nats.embedded.listen %q: bad port: %w", listen, err)
		}
		if opts.Port == 0 {
			opts.Port = server.RANDOM_PORT
		}
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		store.release()
		return nil, fmt.Errorf("embedded NATS server: %w", err)
	}
	sl := &serverLogger{log: log.With().Str("component", "nats-server").Logger(), fatal: make(chan string, 1)}
	srv.SetLoggerV2(sl, false, false, false)
	go srv.Start()
	if err := waitReady(srv, sl.fatal); err != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
		store.release()
		if listen != "" {
			return nil, fmt.Errorf("embedded NATS server (nats.embedded.listen %q): %w", listen, err)
		}
		return nil, fmt.Errorf("embedded NATS server: %w", err)
	}
	return &embeddedServer{srv: srv, store: store, token: e.Auth.Token.Value()}, nil
}

// waitReady waits until srv accepts clients, or returns at once with the
// server's fatal error (a port in use, a store it cannot open), which would
// otherwise only surface as a timeout.
func waitReady(srv *server.Server, fatal <-chan string) error {
	deadline := time.Now().Add(embeddedReady)
	for time.Now().Before(deadline) {
		select {
		case msg := <-fatal:
			return errors.New(msg)
		default:
		}
		if srv.ReadyForConnections(embeddedReadyPoll) {
			if !srv.JetStreamEnabled() {
				return errors.New("JetStream did not start")
			}
			return nil
		}
	}
	return fmt.Errorf("not ready within %v", embeddedReady)
}

// ClientURL is where TCP clients reach the server, or "" when it does not
// listen.
func (e *embeddedServer) ClientURL() string {
	if e.srv.Addr() == nil {
		return ""
	}
	return e.srv.ClientURL()
}

// shutdown stops the server, waits for it to flush its store, then releases
// the store lock.
func (e *embeddedServer) shutdown() {
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
	e.store.release()
}

// serverLogger adapts nats-server's logger to zerolog. Notices (banner,
// JetStream recovery) are debug-level: cronlock logs what matters itself.
// Fatal errors are reported on fatal instead of exiting the process.
type serverLogger struct {
	log   zerolog.Logger
	fatal chan string
}

func (l *serverLogger) Noticef(format string, v ...any) { l.log.Debug().Msgf(format, v...) }
func (l *serverLogger) Warnf(format string, v ...any)   { l.log.Warn().Msgf(format, v...) }
func (l *serverLogger) Errorf(format string, v ...any)  { l.log.Error().Msgf(format, v...) }
func (l *serverLogger) Debugf(format string, v ...any)  { l.log.Debug().Msgf(format, v...) }
func (l *serverLogger) Tracef(format string, v ...any)  { l.log.Trace().Msgf(format, v...) }

func (l *serverLogger) Fatalf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	l.log.Error().Msg(msg)
	select {
	case l.fatal <- msg:
	default:
	}
}

// warnEmbeddedOpen warns, once at start, when the embedded server accepts
// TCP clients without a token: config allows that only on a loopback
// address, where every process and user of this host can still reach the
// locks and the history.
func warnEmbeddedOpen(log zerolog.Logger, e config.Embedded) {
	if e.Listen == "" || e.Auth.InUse() {
		return
	}
	log.Warn().Str("listen", e.Listen).Msg("the embedded NATS server accepts clients on nats.embedded.listen without " +
		"a token: every process on this host can take, release and forge locks; set nats.embedded.auth.token_file")
}
