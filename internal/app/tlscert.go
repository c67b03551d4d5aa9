package app

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// certCheckInterval is how often the HTTP certificate's files are looked at
// for a renewal (cert-manager, certbot): a renewed certificate is served
// within this long, without a restart.
const certCheckInterval = time.Minute

// certFiles serves the certificate of http.tls, reloading it when its
// files change. A renewal that cannot be loaded (half written, a key that
// does not match) is logged and the previous certificate kept.
type certFiles struct {
	certFile, keyFile string
	log               zerolog.Logger

	mu       sync.Mutex
	current  *tls.Certificate
	modified [2]time.Time // of certFile and keyFile when current was loaded
	checked  time.Time
}

// loadCertFiles loads the key pair once; an error names the keys.
func loadCertFiles(certFile, keyFile string, log zerolog.Logger) (*certFiles, error) {
	c := &certFiles{certFile: certFile, keyFile: keyFile, log: log}
	cert, mod, err := c.load()
	if err != nil {
		return nil, fmt.Errorf("http.tls.cert_file %q, http.tls.key_file %q: %w", certFile, keyFile, err)
	}
	c.current, c.modified, c.checked = cert, mod, time.Now()
	return c, nil
}

func (c *certFiles) load() (*tls.Certificate, [2]time.Time, error) {
	var mod [2]time.Time
	for i, f := range []string{c.certFile, c.keyFile} {
		st, err := os.Stat(f)
		if err != nil {
			return nil, mod, err
		}
		mod[i] = st.ModTime()
	}
	cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return nil, mod, err
	}
	return &cert, mod, nil
}

// config is the listeners' TLS configuration.
func (c *certFiles) config() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: c.get}
}

// get is tls.Config.GetCertificate.
func (c *certFiles) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.checked) < certCheckInterval {
		return c.current, nil
	}
	c.checked = time.Now()
	changed := false
	for i, f := range []string{c.certFile, c.keyFile} {
		if st, err := os.Stat(f); err == nil && !st.ModTime().Equal(c.modified[i]) {
			changed = true
		}
	}
	if !changed {
		return c.current, nil
	}
	cert, mod, err := c.load()
	if err != nil {
		c.log.Warn().Err(err).Str("cert_file", c.certFile).Msg("HTTP certificate changed but cannot be loaded; serving the previous one")
		return c.current, nil
	}
	c.current, c.modified = cert, mod
	c.log.Info().Str("cert_file", c.certFile).Msg("HTTP certificate reloaded")
	return c.current, nil
}
