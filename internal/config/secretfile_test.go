package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const fileToken = "0f3c9a1e7b2d4c6f8a0b1c2d3e4f5a6b"

// loadIn writes the files (name -> content) and cronlock.yaml into a new
// folder and loads the configuration from there.
func loadIn(t *testing.T, yaml string, files map[string]string) (*Config, error) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "cronlock.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return Load(path)
}

// TestSecretFiles: every x_file key fills its secret from a file relative
// to the configuration's folder, one trailing line break trimmed.
func TestSecretFiles(t *testing.T) {
	t.Parallel()
	src := "nats:\n  url: nats://x:4222\n  user: me\n  password_file: pw\n" +
		"http:\n  listen: \":8080\"\n  admin_token_file: admin\n  read_token_file: read\n" +
		"notify:\n  - webhook: https://hooks.example.com/x\n    secret_file: hmac\n    headers_file: headers\n" + job0
	cfg, err := loadIn(t, src, map[string]string{
		"pw": "hunter2\n", "admin": fileToken + "\r\n", "read": "r" + fileToken, "hmac": "k3y",
		"headers": "# comment\nAuthorization: Bearer abc def \n\nX-Team:ops\n",
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]Secret{
		"password": cfg.NATS.Password, "admin_token": cfg.HTTP.AdminToken, "read_token": cfg.HTTP.ReadToken,
		"secret": cfg.Notify[0].Secret,
	} {
		want := map[string]string{"password": "hunter2", "admin_token": fileToken, "read_token": "r" + fileToken, "secret": "k3y"}[name]
		if got.Value() != want {
			t.Errorf("%s = %q, want %q", name, got.Value(), want)
		}
	}
	h := cfg.Notify[0].Headers
	if len(h) != 2 || h["Authorization"] != "Bearer abc def" || h["X-Team"] != "ops" {
		t.Errorf("headers = %#v", h)
	}
	if !filepath.IsAbs(cfg.HTTP.AdminTokenFile) || !filepath.IsAbs(cfg.Notify[0].HeadersFile) {
		t.Errorf("_file paths not resolved: %q %q", cfg.HTTP.AdminTokenFile, cfg.Notify[0].HeadersFile)
	}
}

// TestSecretFileErrors: each problem names the _file key and its line (and
// the headers file's line), never the value.
func TestSecretFileErrors(t *testing.T) {
	t.Parallel()
	http := "http:\n  listen: \":8080\"\n"
	hook := "notify:\n  - webhook: https://hooks.example.com/x\n"
	for _, tt := range []struct {
		name, src string
		files     map[string]string
		want      []string
	}{
		{"both", http + "  admin_token: " + fileToken + "\n  admin_token_file: admin\n" + job0,
			map[string]string{"admin": fileToken}, []string{"cronlock.yaml:4: http.admin_token_file: conflicts with http.admin_token"}},
		{"missing", http + "  admin_token_file: nope\n" + job0, nil,
			[]string{"cronlock.yaml:3: http.admin_token_file: cannot read the file", "no such file"}},
		{"empty", http + "  read_token_file: e\n" + job0, map[string]string{"e": "\n"},
			[]string{"cronlock.yaml:3: http.read_token_file: the file \"e\" is empty"}},
		{"weak", http + "  admin_token_file: admin\n" + job0, map[string]string{"admin": "changeme-changeme\n"},
			[]string{"cronlock.yaml:3: http.admin_token_file: is a placeholder"}},
		{"not regular", http + "  admin_token_file: /dev/null\n" + job0, nil,
			[]string{"cronlock.yaml:3: http.admin_token_file: \"/dev/null\" is not a regular file"}},
		{"too large", http + "  admin_token_file: big\n" + job0, map[string]string{"big": strings.Repeat("a", maxSecretFile+1)},
			[]string{"cronlock.yaml:3: http.admin_token_file: the file", "larger than 65536 bytes"}},
		{"nats both", "nats:\n  url: nats://x:4222\n  token: abc\n  token_file: t\n" + job0, map[string]string{"t": "abc"},
			[]string{"cronlock.yaml:4: nats.token_file: conflicts with nats.token"}},
		{"headers both", hook + "    headers: {A: b}\n    headers_file: h\n" + job0, map[string]string{"h": "A: b"},
			[]string{"cronlock.yaml:4: notify[0].headers_file: conflicts with notify[0].headers"}},
		{"headers lines", hook + "    headers_file: h\n" + job0,
			map[string]string{"h": "Good: 1\nno colon here s3cr3t\nBad Name: s3cr3t\nHost: x\ngood: 2\n"},
			[]string{"cronlock.yaml:3: notify[0].headers_file: \"h\": line 2: want \"Name: value\"",
				"line 3: invalid header name", "line 4: Host is set by cronlock", "line 5: header Good repeated (first at line 1)"}},
		{"secret on command", "notify:\n  - command: [\"true\"]\n    secret_file: s\n" + job0, map[string]string{"s": "k"},
			[]string{"cronlock.yaml:3: notify[0].secret_file: applies only to webhook targets"}},
	} {
		_, err := loadIn(t, tt.src, tt.files)
		if err == nil {
			t.Errorf("%s: accepted", tt.name)
			continue
		}
		msg := err.Error()
		for _, w := range tt.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: error %q\nwant it to contain %q", tt.name, msg, w)
			}
		}
		if strings.Contains(msg, "s3cr3t") || strings.Contains(msg, "changeme") || strings.Contains(msg, fileToken) {
			t.Errorf("%s: error repeats a secret: %q", tt.name, msg)
		}
	}
}

// TestEmbeddedAuth: a listen address off loopback needs a token; with one
// it is accepted; the token applies only to the embedded server.
func TestEmbeddedAuth(t *testing.T) {
	t.Parallel()
	emb := func(body string) string { return "nats:\n  embedded:\n" + body + job0 }
	for _, tt := range []struct {
		name, src, want string
	}{
		{"all interfaces", emb("    listen: 0.0.0.0:4222\n"), "cronlock.yaml:3: nats.embedded.listen: listens on \"0.0.0.0:4222\", which is not a loopback address, without credentials"},
		{"empty host", emb("    listen: \":4222\"\n"), "nats.embedded.listen: listens on \":4222\""},
		{"lan", emb("    listen: 10.0.0.1:4222\n"), "nats.embedded.listen: listens on"},
		{"loopback", emb("    listen: 127.0.0.1:4222\n"), ""},
		{"localhost", emb("    listen: localhost:4222\n"), ""},
		{"v6 loopback", emb("    listen: \"[::1]:4222\"\n"), ""},
		{"with token", emb("    listen: 0.0.0.0:4222\n    auth: {token: " + fileToken + "}\n"), ""},
		{"with token file", emb("    listen: 0.0.0.0:4222\n    auth: {token_file: tok}\n"), ""},
		{"weak token", emb("    listen: 0.0.0.0:4222\n    auth: {token: short}\n"), "cronlock.yaml:4: nats.embedded.auth.token: too short"},
		{"with url", "nats:\n  url: nats://x:4222\n  embedded:\n    auth: {token: " + fileToken + "}\n" + job0,
			"nats.embedded.auth.token: applies only to the embedded server"},
		{"client token too", "nats:\n  token: abc\n  embedded:\n    auth: {token: " + fileToken + "}\n" + job0,
			"cronlock.yaml:2: nats.token: conflicts with nats.embedded.auth.token"},
	} {
		_, err := loadIn(t, tt.src, map[string]string{"tok": fileToken + "\n"})
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: error %v\nwant %q", tt.name, err, tt.want)
		}
	}
}
