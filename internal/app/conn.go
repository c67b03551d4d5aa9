package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/config"
)

// Reconnect backoff of the daemon's connection, before its first connect
// and after every disconnect: exponential from reconnectBase to
// reconnectMax, each pause drawn from its upper half (jitter), forever.
//
// The bound it gives: the daemon is connected again within
// reconnectMax + reconnectDialTimeout (1.5 s) of a server being back, plus
// the NATS handshake (INFO, TLS, CONNECT/PING, a few round trips): a pause
// in progress then ends within reconnectMax, and a dial in progress
// (to a host that drops packets rather than refusing them) within
// reconnectDialTimeout, after which the next pause is under reconnectMax.
// nats.go pauses once per round over its server pool, so with several
// servers that all drop packets a round takes up to one dial timeout per
// server. The cost is one dial a second at most per replica while NATS is
// down: a refused connection or a SYN, no load.
const (
	reconnectBase = 250 * time.Millisecond
	reconnectMax  = time.Second
	// reconnectDialTimeout bounds the TCP connect of one attempt of the
	// daemon: far above a round trip between regions, short enough that an
	// attempt that went to a dead host does not hold up the reconnect.
	reconnectDialTimeout = 500 * time.Millisecond
	// connectTimeout bounds the handshake once TCP is up (nats.Timeout),
	// an operator command's whole connect, and the drain at Close.
	connectTimeout = 5 * time.Second
)

// Conn is a NATS connection with its JetStream context and, in embedded
// mode, the server it talks to.
type Conn struct {
	NC *nats.Conn
	JS jetstream.JetStream
	// Embedded is the in-process server, or nil.
	embedded *embeddedServer
	// up is closed once the client has first connected; closed when
	// the client has given up for good (nil: not watched).
	up, closed chan struct{}
	// refusals are cancelled when the server refuses a permission.
	refusals refusals
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

// dialURL connects an operator command to cfg.URL. It fails fast: a server
// that is not there is an error after the client's default attempts.
// Secrets never appear in the returned error or in logs: URLs are shown
// with their user information redacted.
func dialURL(cfg config.NATS, log zerolog.Logger) (*Conn, error) {
	opts, err := clientOptions(cfg, log)
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect(cfg.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS at %s (nats.url): %w", redactURLs(cfg.URL), err)
	}
	log.Info().Str("server", nc.ConnectedUrlRedacted()).Msg("connected to NATS")
	return newConn(nc, nil, cfg.JetStream)
}

// connectLogEvery is the least time between two warnings about failed
// connection attempts: a replica waiting for NATS logs that it waits, not
// each attempt (about four a second at first).
const connectLogEvery = 5 * time.Second

// dialRetrying starts the daemon's connection to cfg.URL and returns it
// without waiting for it to be up: a server that is not there yet (DNS
// name not resolving, connection refused) is retried forever by nats.go
// itself (RetryOnFailedConnect), with the reconnect backoff, and so are
// later disconnects. failed receives each failed attempt; warnings are
// logged at most every connectLogEvery. Dials in progress are abandoned
// when dialCtx is done, so that a shutdown does not wait for a connect
// timeout. Only bad options are an error; see Conn.WaitConnected.
func dialRetrying(dialCtx context.Context, cfg config.NATS, log zerolog.Logger, failed func(error)) (*Conn, error) {
	opts, err := clientOptions(cfg, log)
	if err != nil {
		return nil, err
	}
	c := &Conn{up: make(chan struct{}), closed: make(chan struct{})}
	var upOnce sync.Once
	markUp := func(nc *nats.Conn) {
		upOnce.Do(func() { close(c.up) })
		log.Info().Str("server", nc.ConnectedUrlRedacted()).Msg("connected to NATS")
	}
	warn := throttledWarn(log, "cannot connect to NATS; retrying (no job starts until connected)")
	opts = append(opts,
		nats.SetCustomDialer(ctxDialer{ctx: dialCtx, d: net.Dialer{Timeout: reconnectDialTimeout}}),
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.CustomReconnectDelay(reconnectDelay),
		nats.ConnectHandler(markUp),
		nats.ReconnectErrHandler(func(_ *nats.Conn, err error) {
			failed(err)
			warn(err)
		}),
		nats.ClosedHandler(func(*nats.Conn) { close(c.closed) }),
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
	nc, err := nats.Connect(cfg.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS at %s (nats.url): %w", redactURLs(cfg.URL), err)
	}
	if c.JS, err = newJetStream(nc, cfg.JetStream); err != nil {
		nc.Close()
		return nil, err
	}
	c.NC = nc
	c.hookRefusals()
	return c, nil
}

// WaitConnected waits until the connection of dialRetrying is first up. It
// returns an error if the client gives up for good (the server rejects the
// credentials twice) or ctx is done.
func (c *Conn) WaitConnected(ctx context.Context) error {
	select {
	case <-c.up:
		return nil
	case <-c.closed:
		if err := c.NC.LastError(); err != nil {
			return fmt.Errorf("NATS connection closed: %w", err)
		}
		return errors.New("NATS connection closed")
	case <-ctx.Done():
		return ctx.Err()
	}
}

// throttledWarn returns a function that logs msg with the error at warn,
// at most once per connectLogEvery, counting the attempts in between.
func throttledWarn(log zerolog.Logger, msg string) func(error) {
	var mu sync.Mutex
	var last time.Time
	failures := 0
	return func(err error) {
		mu.Lock()
		defer mu.Unlock()
		failures++
		if time.Since(last) < connectLogEvery {
			return
		}
		log.Warn().Err(err).Int("failed_attempts", failures).Msg(msg)
		last, failures = time.Now(), 0
	}
}

// ctxDialer dials TCP until its context is done.
type ctxDialer struct {
	ctx context.Context
	d   net.Dialer
}

func (c ctxDialer) Dial(network, address string) (net.Conn, error) {
	return c.d.DialContext(c.ctx, network, address)
}

// dialInProcess connects to an embedded server without a socket.
func dialInProcess(cfg config.NATS, e *embeddedServer, log zerolog.Logger) (*Conn, error) {
	opts, err := clientOptions(config.NATS{Name: cfg.Name, Token: config.Secret(e.token)}, log)
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect("", append(opts, nats.InProcessServer(e.srv))...)
	if err != nil {
		return nil, fmt.Errorf("connect to the embedded NATS server: %w", err)
	}
	return newConn(nc, e, config.JetStream{})
}

func newConn(nc *nats.Conn, e *embeddedServer, where config.JetStream) (*Conn, error) {
	js, err := newJetStream(nc, where)
	if err != nil {
		nc.Close()
		return nil, err
	}
	up := make(chan struct{})
	close(up)
	c := &Conn{NC: nc, JS: js, embedded: e, up: up}
	c.hookRefusals()
	return c, nil
}

// newJetStream is the JetStream context of nc in the domain or under the
// API prefix that where names, if any.
func newJetStream(nc *nats.Conn, where config.JetStream) (jetstream.JetStream, error) {
	var js jetstream.JetStream
	var err error
	switch {
	case where.Domain != "":
		js, err = jetstream.NewWithDomain(nc, where.Domain)
	case where.APIPrefix != "":
		js, err = jetstream.NewWithAPIPrefix(nc, where.APIPrefix)
	default:
		js, err = jetstream.New(nc)
	}
	if err != nil {
		return nil, fmt.Errorf("JetStream: %w", err)
	}
	return js, nil
}

// clientOptions turns the nats section into client options: name,
// authentication (at most one method, as config validated), TLS, reply
// subject prefix, server discovery, and an error handler for asynchronous
// errors such as permission violations.
func clientOptions(cfg config.NATS, log zerolog.Logger) ([]nats.Option, error) {
	opts := []nats.Option{
		nats.Name(cfg.Name),
		nats.Timeout(connectTimeout),
		nats.ErrorHandler(asyncErrorLogger(log)),
	}
	auth, err := authOption(cfg)
	if err != nil {
		return nil, err
	}
	if auth != nil {
		opts = append(opts, auth)
	}
	if cfg.TLS.ServerName != "" {
		// Before RootCAs and ClientCert, which keep a TLS config that is
		// already set and add their files to each handshake.
		opts = append(opts, nats.Secure(&tls.Config{ServerName: cfg.TLS.ServerName, MinVersion: tls.VersionTLS12}))
	}
	if cfg.TLS.CAFile != "" {
		opts = append(opts, nats.RootCAs(cfg.TLS.CAFile))
	}
	if cfg.TLS.CertFile != "" {
		opts = append(opts, nats.ClientCert(cfg.TLS.CertFile, cfg.TLS.KeyFile))
	}
	if cfg.InboxPrefix != "" {
		opts = append(opts, nats.CustomInboxPrefix(cfg.InboxPrefix))
	}
	if cfg.IgnoreDiscoveredServers {
		opts = append(opts, nats.IgnoreDiscoveredServers())
	}
	return opts, nil
}

// authOption is the option of the authentication method set, or nil.
func authOption(cfg config.NATS) (nats.Option, error) {
	switch {
	case cfg.CredsFile != "":
		return nats.UserCredentials(cfg.CredsFile), nil
	case cfg.NKeyFile != "":
		o, err := nats.NkeyOptionFromSeed(cfg.NKeyFile)
		if err != nil {
			return nil, fmt.Errorf("nats.nkey_file: %w", err)
		}
		return o, nil
	case cfg.Token != "":
		return nats.Token(cfg.Token.Value()), nil
	case cfg.User != "":
		return nats.UserInfo(cfg.User, cfg.Password.Value()), nil
	}
	return nil, nil
}

// reconnectDelay is the pause before reconnect round attempts (nats.go
// counts from 1 and pauses before the first round too): doubling from
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
