package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"github.com/cronlock/cronlock/internal/web"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/oklog/run"

	"github.com/cronlock/cronlock/internal/config"
)

// httpReadHeaderTimeout bounds reading a request's headers (and a TLS
// handshake); http.read_timeout lowers it.
const httpReadHeaderTimeout = 10 * time.Second

// httpShutdownTimeout bounds the graceful close of the HTTP servers, once
// the scheduler has stopped.
const httpShutdownTimeout = 5 * time.Second

// httpListeners are what listenHTTP binds: the listeners of http.listen and
// http.metrics_listen (nil when not configured), whose connections count
// against one limiter, and the certificate when http.tls is set.
type httpListeners struct {
	main, metrics net.Listener
	conns         *connLimiter
	tls           *tls.Config // nil: plain HTTP
	// refusals logs the requests refused on both listeners: by
	// allowedHosts here and by the page's token checks, one line a minute
	// per client in all.
	refusals *web.RefusalLog
}

// listenHTTP binds the HTTP listeners of d.cfg, loads the certificate and
// registers the connection metrics. On error it leaves nothing bound.
func (d *Daemon) listenHTTP() error {
	h := d.cfg.HTTP
	if h.Listen == "" && h.MetricsListen == "" {
		return nil
	}
	log := d.log.With().Str("component", "http").Logger()
	if h.TLS.CertFile != "" {
		certs, err := loadCertFiles(h.TLS.CertFile, h.TLS.KeyFile, log)
		if err != nil {
			return err
		}
		d.http.tls = certs.config()
	}
	d.http.refusals = web.NewRefusalLog(log)
	d.http.conns = newConnLimiter(httpConnectionLimit(h.MaxConnections, config.DefaultHTTPMaxConnections, log), log)
	for _, c := range d.http.conns.collectors() {
		if err := d.reg.Register(c); err != nil {
			return err
		}
	}
	scheme := "http"
	if d.http.tls != nil {
		scheme = "https"
	}
	for _, l := range []struct {
		key, addr, serves string
		ln                *net.Listener
	}{
		{"http.listen", h.Listen, "/ (status page) /api/ /metrics /healthz /readyz", &d.http.main},
		{"http.metrics_listen", h.MetricsListen, "/metrics", &d.http.metrics},
	} {
		if l.addr == "" {
			continue
		}
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			d.http.close()
			return fmt.Errorf("%s %q: %w", l.key, l.addr, err)
		}
		*l.ln = d.http.conns.listener(ln)
		d.log.Info().Str("addr", ln.Addr().String()).Str("scheme", scheme).Int("max_connections", d.http.conns.max).
			Msg("HTTP server listening: " + l.serves)
	}
	return nil
}

// close closes the listeners (already closed by their servers if they ran).
func (l *httpListeners) close() {
	for _, ln := range []net.Listener{l.main, l.metrics} {
		if ln != nil {
			ln.Close()
		}
	}
}

// newHTTPServer is a server of handler with the timeouts of http: and the
// connection limiter's hook, logging through the daemon's logger.
func (d *Daemon) newHTTPServer(handler http.Handler) *http.Server {
	t := d.cfg.HTTP.HTTPTransport
	read := orDefault(t.ReadTimeout, config.DefaultHTTPReadTimeout)
	var tlsCfg *tls.Config
	if d.http.tls != nil {
		tlsCfg = d.http.tls.Clone() // each server adds its protocols (h2) to its own
	}
	return &http.Server{
		Handler:           allowedHosts(handler, t.AllowedHosts, d.http.refusals),
		ReadHeaderTimeout: min(httpReadHeaderTimeout, read),
		ReadTimeout:       read,
		WriteTimeout:      orDefault(t.WriteTimeout, config.DefaultHTTPWriteTimeout),
		IdleTimeout:       orDefault(t.IdleTimeout, config.DefaultHTTPIdleTimeout),
		ConnState:         d.http.conns.track,
		ErrorLog:          httpErrorLog(d.log.With().Str("component", "http").Logger()),
		TLSConfig:         tlsCfg,
	}
}

// orDefault is v, or dflt when v is zero (a Config not made by Parse).
func orDefault(v, dflt config.Duration) time.Duration {
	if v == 0 {
		return dflt.Duration()
	}
	return v.Duration()
}

// addHTTPActors adds to g a server for each bound listener. Each is closed
// once the scheduler is done (schedDone), so that /healthz and /metrics
// stay up while jobs drain; bg waits for the closing.
func (d *Daemon) addHTTPActors(g *run.Group, bg *sync.WaitGroup, schedDone <-chan struct{}) {
	metrics := http.NewServeMux()
	metrics.Handle("GET /metrics", d.metricsHandler())
	for _, s := range []struct {
		ln      net.Listener
		handler http.Handler
	}{{d.http.main, d.handler()}, {d.http.metrics, metrics}} {
		if s.ln == nil {
			continue
		}
		srv := d.newHTTPServer(s.handler)
		g.Add(func() error {
			var err error
			if srv.TLSConfig != nil {
				err = srv.ServeTLS(s.ln, "", "")
			} else {
				err = srv.Serve(s.ln)
			}
			if !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("HTTP server: %w", err)
			}
			return nil
		}, func(error) {
			bg.Go(func() {
				<-schedDone
				ctx, cancel := context.WithTimeout(context.Background(), httpShutdownTimeout)
				defer cancel()
				srv.Shutdown(ctx)
			})
		})
	}
}

// MetricsAddr is the address of the http.metrics_listen listener, or nil
// when there is none.
func (d *Daemon) MetricsAddr() net.Addr {
	if d.http.metrics == nil {
		return nil
	}
	return d.http.metrics.Addr()
}
