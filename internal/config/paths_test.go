package config

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRelativePaths: every path key written relative is taken relative to
// the configuration file's folder (made absolute), whatever the working
// directory; absolute paths stay as written, empty ones empty.
func TestRelativePaths(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "conf", "cronlock.yaml")
	data := []byte(`
nats:
  url: nats://x:4222
  embedded: {store_dir: state/nats}
  creds_file: secrets/nats.creds
  tls: {ca_file: tls/ca.pem, cert_file: ../tls/client.pem, key_file: /etc/tls/client.key}
notify:
  - {command: ["true"], dir: hooks}
  - {command: ["true"]}
jobs:
  - {name: a, schedule: "@daily", shell: "true", dir: work, notify: [{command: ["true"], dir: ../hooks}]}
  - {name: b, schedule: "@daily", shell: "true"}
  - {name: c, schedule: "@daily", shell: "true", dir: /srv}
`)
	cfg, err := Parse(file, data)
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "conf")
	for _, c := range []struct{ key, got, want string }{
		{"nats.embedded.store_dir", cfg.NATS.Embedded.StoreDir, filepath.Join(conf, "state/nats")},
		{"nats.creds_file", cfg.NATS.CredsFile, filepath.Join(conf, "secrets/nats.creds")},
		{"nats.tls.ca_file", cfg.NATS.TLS.CAFile, filepath.Join(conf, "tls/ca.pem")},
		{"nats.tls.cert_file", cfg.NATS.TLS.CertFile, filepath.Join(dir, "tls/client.pem")},
		{"nats.tls.key_file", cfg.NATS.TLS.KeyFile, "/etc/tls/client.key"},
		{"jobs[0].dir", cfg.Jobs[0].Dir, filepath.Join(conf, "work")},
		{"jobs[1].dir", cfg.Jobs[1].Dir, ""},
		{"jobs[2].dir", cfg.Jobs[2].Dir, "/srv"},
		{"notify[0].dir", cfg.Notify[0].Dir, filepath.Join(conf, "hooks")},
		{"notify[1].dir", cfg.Notify[1].Dir, ""},
		{"jobs[0].notify[0].dir", cfg.Jobs[0].Notify[0].Dir, filepath.Join(dir, "hooks")},
	} {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.key, c.got, c.want)
		}
	}

	// nkey_file (exclusive with creds_file), and a file named relative to
	// the working directory: its folder is made absolute.
	cfg, err = Parse(filepath.Join("conf", "c.yaml"), []byte("nats: {nkey_file: seed.nk}\n"+job0))
	if err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(wd, "conf", "seed.nk"); cfg.NATS.NKeyFile != want {
		t.Errorf("nats.nkey_file = %q, want %q", cfg.NATS.NKeyFile, want)
	}
	if want := filepath.Join(wd, "conf", DefaultStoreDir); cfg.NATS.Embedded.StoreDir != want {
		t.Errorf("default nats.embedded.store_dir = %q, want %q", cfg.NATS.Embedded.StoreDir, want)
	}
}
