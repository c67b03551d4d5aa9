package config

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

const secret = "hunter2"

func TestSecretFormatting(t *testing.T) {
	t.Parallel()
	s := Secret(secret)
	if s.Value() != secret {
		t.Errorf("Value() = %q", s.Value())
	}
	for _, tt := range []struct{ format, want string }{
		{"%v", "[redacted]"}, {"%+v", "[redacted]"}, {"%#v", "[redacted]"}, {"%s", "[redacted]"},
		{"%q", `"[redacted]"`}, {"%x", "[redacted]"}, {"%X", "[redacted]"}, {"%d", "[redacted]"},
		{"%12s|", "  [redacted]|"}, {"%-12s|", "[redacted]  |"}, {"%.3s", "[redacted]"},
	} {
		if got := fmt.Sprintf(tt.format, s); got != tt.want {
			t.Errorf("Sprintf(%q) = %q, want %q", tt.format, got, tt.want)
		}
	}
	if got := fmt.Sprintf("%v|%q", Secret(""), Secret("")); got != `|""` {
		t.Errorf("empty secret prints %q", got)
	}
	if got := s.String(); got != Redacted {
		t.Errorf("String() = %q", got)
	}
	for name, m := range map[string]func() ([]byte, error){"JSON": s.MarshalJSON, "Text": s.MarshalText} {
		if b, err := m(); err != nil || strings.Contains(string(b), secret) {
			t.Errorf("Marshal%s = %q, %v", name, b, err)
		}
	}
	if v, err := s.MarshalYAML(); v != Redacted || err != nil {
		t.Errorf("MarshalYAML = %v, %v", v, err)
	}
}

// leaks reports whether text shows the secret, in clear or hex.
func leaks(text string) bool {
	return strings.Contains(text, secret) || strings.Contains(strings.ToLower(text), hex.EncodeToString([]byte(secret)))
}

func TestSecretsNotInConfigRendering(t *testing.T) {
	t.Parallel()
	src := "nats:\n  url: nats://x:4222\n  user: me\n  password: " + secret + "\n" + job0
	cfg, err := Parse("c.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.NATS.Password.Value() != secret {
		t.Fatalf("password = %q", cfg.NATS.Password.Value())
	}
	cfg2, err := Parse("c.yaml", []byte("nats:\n  url: nats://x:4222\n  token: "+secret+"\n"+job0))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*Config{cfg, cfg2} {
		for _, f := range []string{"%v", "%+v", "%#v", "%s", "%x"} {
			if out := fmt.Sprintf(f, c); leaks(out) || leaks(fmt.Sprintf(f, *c)) {
				t.Errorf("Sprintf(%q, cfg) shows the secret: %s", f, out)
			}
		}
		if b, err := json.Marshal(c); err != nil || leaks(string(b)) {
			t.Errorf("json.Marshal = %s, %v", b, err)
		}
		if b, err := yaml.Marshal(c); err != nil || leaks(string(b)) {
			t.Errorf("yaml.Marshal = %s, %v", b, err)
		}
	}
	if out := fmt.Sprintf("%+v", cfg); !strings.Contains(out, "Password:[redacted]") {
		t.Errorf("%%+v does not show Password:[redacted]: %s", out)
	}
}

// TestSecretsNotInErrors feeds secrets to token and password in every way
// that fails, including YAML syntax errors on the secret's own line.
func TestSecretsNotInErrors(t *testing.T) {
	t.Parallel()
	for _, nats := range []string{
		"  token: [" + secret + "]\n",
		"  token: {" + secret + ": x}\n",
		"  password: {k: " + secret + "}\n",
		"  token: " + secret + "\n  creds_file: a.creds\n",
		"  creds_file: a.creds\n  token: " + secret + "\n",
		"  password: " + secret + "\n",
		"  user: " + secret + "x\n  password: " + secret + "\n  nkey_file: k\n",
		"  token: " + secret + "\n  token: " + secret + "\n",
		"  password: &" + secret + " x\n",
		"  token: !" + secret + " x\n",
		"  token: 12345\n",
		// Syntax errors whose goccy message quotes the offending text.
		"  password: |" + secret + "\n",
		"  password: >" + secret + "\n",
		"  password: \"" + secret + "\\q\"\n",
		"  token: \"" + secret + "\n",
		"  token: '" + secret + "\n",
		"  token: [" + secret + "\n",
		"  token: {" + secret + "\n",
		"  token: " + secret + ": x\n",
		"  token: @" + secret + "\n",
		"  token: `" + secret + "\n",
		"  token: !<" + secret + "> x\n",
		"  token: " + secret + "\n    extra\n  - x\n",
		"  token: \"" + secret + "\" x\n",
	} {
		src := "nats:\n  url: nats://x:4222\n" + nats + job0
		_, err := Parse("c.yaml", []byte(src))
		if err == nil {
			t.Errorf("no error for\n%s", nats)
			continue
		}
		t.Logf("%s", err)
		if leaks(err.Error()) {
			t.Errorf("error shows the secret:\n%s\nfor\n%s", err, nats)
		}
	}
}

// TestAdminTokenNotInErrors: http.admin_token is a Secret too; its
// validation errors never repeat it.
func TestAdminTokenNotInErrors(t *testing.T) {
	t.Parallel()
	for _, h := range []string{
		"  admin_token: " + secret + "\n", // no listen
		"  listen: \":8080\"\n  admin_token: \"" + secret + " x\"\n",
		"  listen: \":8080\"\n  admin_token: [" + secret + "]\n",
		"  listen: \":8080\"\n  admin_token: \"" + secret + "\n",
	} {
		_, err := Parse("c.yaml", []byte("http:\n"+h+job0))
		if err == nil {
			t.Errorf("no error for\n%s", h)
			continue
		}
		if leaks(err.Error()) {
			t.Errorf("error shows the admin token:\n%s\nfor\n%s", err, h)
		}
	}
	long := secret + "-0123456789abcdef"
	cfg, err := Parse("c.yaml", []byte("http:\n  listen: \":8080\"\n  admin_token: "+long+"\n"+job0))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HTTP.AdminToken.Value() != long {
		t.Fatalf("admin_token = %q", cfg.HTTP.AdminToken.Value())
	}
	if out := fmt.Sprintf("%+v", cfg); leaks(out) {
		t.Errorf("%%+v shows the admin token: %s", out)
	}
}

func TestSecretLine(t *testing.T) {
	t.Parallel()
	data := []byte(`nats:
  url: x
  password: |
    first

    second
  user: me
jobs:
  - env: {API_TOKEN: x}
    name: a
`)
	want := map[int]bool{3: true, 4: true, 5: true, 6: true, 9: true}
	for ln := 0; ln <= 12; ln++ {
		if got := secretLine(data, ln); got != want[ln] {
			t.Errorf("secretLine(%d) = %v, want %v", ln, got, want[ln])
		}
	}
}
