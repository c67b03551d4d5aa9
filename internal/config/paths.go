package config

import (
	"path/filepath"
)

// Relative paths in the file are relative to the file's folder, not to the
// working directory of whoever reads it: `cronlock status -c
// /etc/cronlock/cronlock.yaml` run from a home directory finds the same
// store, credentials and certificates as the daemon started by systemd in
// /var/lib/cronlock. These are the keys that name files or folders.

// resolvePaths makes every relative path key of c absolute against dir, the
// folder of the configuration file (itself absolute): nats.embedded.store_dir
// (its default included), nats.creds_file, nats.nkey_file, nats.tls.ca_file,
// cert_file and key_file, http.tls.cert_file and key_file, the secret files
// (x_file keys), each job's dir, and notification commands' dir and secret
// files (top-level and per job). Empty values stay empty: they
// mean "not set" (a job's dir: cronlock's working directory).
func (c *Config) resolvePaths(dir string) {
	n := &c.NATS
	for _, p := range []*string{
		&n.Embedded.StoreDir, &n.CredsFile, &n.NKeyFile, &n.TLS.CAFile, &n.TLS.CertFile, &n.TLS.KeyFile,
		&n.TokenFile, &n.PasswordFile, &n.Embedded.Auth.TokenFile, &c.HTTP.AdminTokenFile, &c.HTTP.ReadTokenFile,
	} {
		*p = resolvePath(dir, *p)
	}
	c.HTTP.TLS.CertFile = resolvePath(dir, c.HTTP.TLS.CertFile)
	c.HTTP.TLS.KeyFile = resolvePath(dir, c.HTTP.TLS.KeyFile)
	resolveNotify(dir, c.Notify)
	for i := range c.Kinds {
		c.Kinds[i].Dir = resolvePath(dir, c.Kinds[i].Dir)
	}
	for i := range c.Jobs {
		c.Jobs[i].Dir = resolvePath(dir, c.Jobs[i].Dir)
		resolveNotify(dir, c.Jobs[i].Notify)
	}
}

// resolveNotify resolves the notification commands' dir.
func resolveNotify(dir string, targets []NotifyTarget) {
	for i := range targets {
		targets[i].Dir = resolvePath(dir, targets[i].Dir)
		targets[i].SecretFile = resolvePath(dir, targets[i].SecretFile)
		targets[i].HeadersFile = resolvePath(dir, targets[i].HeadersFile)
	}
}

// resolvePath is p joined to dir when p is relative and not empty, else p.
func resolvePath(dir, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

// configDir is the absolute folder of the configuration file filename.
// When the working directory cannot be told (it was removed), it is the
// folder as written, still relative.
func configDir(filename string) string {
	if abs, err := filepath.Abs(filename); err == nil {
		return filepath.Dir(abs)
	}
	return filepath.Dir(filename)
}
