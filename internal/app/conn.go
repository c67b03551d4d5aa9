package app

import (
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/config"
)

// Reconnect backoff of the daemon's connection: exponential from
// reconnectBase to reconnectMax, with jitter, forever.
const (
	reconnectBase  = 250 * time.Millisecond
	reconnectMax   = 5 * time.Second
	connectTimeout = 5 * time.Second
)

// Conn is a NATS connection with its JetStream context and, in embedded
// mode, the server it talks to.
type Conn struct {
	NC *nats.Conn
	JS jetstream.JetStream
	// Embedded is the in-process server, or nil.
	embedded *embeddedServer
}

// Connected reports whether the client is connected to NATS now.
func (c *Conn) Connected() bool { return c.NC.IsConnected() }

// Close drains the client connection (flushing what it has sent), then stops
// the embedded server if there is one and releases its store.
func (c *Conn) Close() {
	if c.NC != nil {
		// Draining closes the connection: not a disconnect to warn about.
		c.NC.SetDisconnectErrHandler(nil)
		if c.NC.IsConnected() {
			done := make(chan struct{})
			c.NC.SetClosedHandler(func(*nats.Conn) { close(done) })
			if err := c.NC.Drain(); err == nil {
				select {
				case <-done:
				case <-time.After(connectTimeout):
				}
			}
		}
		c.NC.Close()
	}
	if c.embedded != nil {
		c.embedded.shutdown()
	}
}

// dialURL connects to cfg.URL. A daemon connection (forever) keeps
// reconnecting with backoff and logs each disconnect and reconnect; an
// operator command's connection gives up after the client's default attempts.
// Secrets never appear in the returned error or in logs: URLs are shown with
// their user information redacted.
func dialURL(cfg config.NATS, log zerolog.Logger, forever bool) (*Conn, error) {
	opts, err := clientOptions(cfg, log)
	if err != nil {
		return nil, err
	}
	if forever {
		opts = append(opts,
			nats.MaxReconnects(-1),
			nats.CustomReconnectDelay(reconnectDelay),
			nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
				ev := log.Warn()
				if err != nil {
					ev = ev.Str("error", err.Error())
				}
				ev.Msg("disconnected from NATS: no job starts until it reconnects")
			}),
			nats.ReconnectHandler(func(nc *nats.Conn) {
				log.Info().Str("server", nc.ConnectedUrlRedacted()).Msg("reconnected to NATS")
			}),
		)
	}
	nc, err := nats.Connect(cfg.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS at %s (nats.url): %w", redactURLs(cfg.URL), err)
	}
	log.Info().Str("server", nc.ConnectedUrlRedacted()).Msg("connected to NATS")
	return newConn(nc, nil)
}

// dialInProcess connects to an embedded server without a socket.
func dialInProcess(cfg config.NATS, e *embeddedServer, log zerolog.Logger) (*Conn, error) {
	opts, err := clientOptions(config.NATS{Name: cfg.Name}, log)
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect("", append(opts, nats.InProcessServer(e.srv))...)
	if err != nil {
		return nil, fmt.Errorf("connect to the embedded NATS server: %w", err)
	}
	return newConn(nc, e)
}

func newConn(nc *nats.Conn, e *embeddedServer) (*Conn, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("JetStream: %w", err)
	}
	return &Conn{NC: nc, JS: js, embedded: e}, nil
}

// clientOptions turns the nats section into client options: name,
// authentication (at most one method, as config validated), TLS files, and
// an error handler for asynchronous errors such as permission violations.
func clientOptions(cfg config.NATS, log zerolog.Logger) ([]nats.Option, error) {
	opts := []nats.Option{
		nats.Name(cfg.Name),
		nats.Timeout(connectTimeout),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			ev := log.Error().Err(err)
			if sub != nil {
				ev = ev.Str("subject", sub.Subject)
			}
			ev.Msg("NATS error")
		}),
	}
	switch {
	case cfg.CredsFile != "":
		opts = append(opts, nats.UserCredentials(cfg.CredsFile))
	case cfg.NKeyFile != "":
		o, err := nats.NkeyOptionFromSeed(cfg.NKeyFile)
		if err != nil {
			return nil, fmt.Errorf("nats.nkey_file: %w", err)
		}
		opts = append(opts, o)
	case cfg.Token != "":
		opts = append(opts, nats.Token(cfg.Token.Value()))
	case cfg.User != "":
		opts = append(opts, nats.UserInfo(cfg.User, cfg.Password.Value()))
	}
	if cfg.TLS.CAFile != "" {
		opts = append(opts, nats.RootCAs(cfg.TLS.CAFile))
	}
	if cfg.TLS.CertFile != "" {
		opts = append(opts, nats.ClientCert(cfg.TLS.CertFile, cfg.TLS.KeyFile))
	}
	return opts, nil
}

// reconnectDelay is the pause before a reconnect round: doubling from
// reconnectBase up to reconnectMax, each drawn uniformly from [d/2, d) so
// that replicas cut off together do not come back in lockstep.
func reconnectDelay(attempts int) time.Duration {
	d := reconnectMax
	if attempts < 16 {
		d = min(reconnectBase<<attempts, reconnectMax)
	}
	return d/2 + rand.N(d/2)
}

// redactURLs hides the user information (user, password or token) of each
// comma-separated URL.
func redactURLs(s string) string {
	parts := strings.Split(s, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		u, err := url.Parse(p)
		switch {
		case err != nil && strings.Contains(p, "@"):
			parts[i] = "[unparsable URL]"
		case err != nil:
			parts[i] = p
		case u.User != nil && u.Scheme != "":
			u.User = nil
			parts[i] = strings.Replace(u.String(), "://", "://"+config.Redacted+"@", 1)
		case u.User != nil:
			parts[i] = config.Redacted + "@" + u.Host
		default:
			parts[i] = p
		}
	}
	return strings.Join(parts, ",")
}
