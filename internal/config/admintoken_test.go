package config

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"
)

// TestAdminTokenPlaceholders: the value config.example.yaml once shipped and
// the usual placeholders are refused, naming the key and the command that
// makes a token; random tokens as openssl and base64 make them are taken.
func TestAdminTokenPlaceholders(t *testing.T) {
	t.Parallel()
	for _, tok := range []string{
		"replace-with-a-long-random-token", // the example's value before
		"changeme", "CHANGE_ME", "secret", "token", "admin", "x",
		"changemechangeme", "CHANGE_ME_CHANGE_ME", "change-me-please-now", "please-change-this-token",
		"your-token-here-123", "YOUR_ADMIN_TOKEN_HERE", "put-your-token-here", "<placeholder-token>",
		"example-admin-token-1234", "not-a-secret-at-all", "password1234567890",
		"secretsecretsecret", "token-token-token-token", "admin_secret_token",
		"xxxxxxxxxxxxxxxx", "0000000000000000", "abababababababab", "----------------", "1234123412341234",
	} {
		_, err := Parse("c.yaml", []byte("http:\n  listen: \":8080\"\n  admin_token: \""+tok+"\"\n"+job0))
		if err == nil {
			t.Errorf("admin_token %q: accepted, want it refused as a placeholder", tok)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, "c.yaml:3: http.admin_token:") || !strings.Contains(msg, AdminTokenCommand) {
			t.Errorf("admin_token %q: error %q, want it at c.yaml:3 on http.admin_token with %q", tok, msg, AdminTokenCommand)
		}
		if len(tok) >= MinAdminTokenLength && !strings.Contains(msg, "is a placeholder") {
			t.Errorf("admin_token %q: error %q, want \"is a placeholder\"", tok, msg)
		}
	}
	for i := range 200 {
		b := make([]byte, 8+i%25)
		rand.Read(b)
		for _, tok := range []string{hex.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b)} {
			if len(tok) < MinAdminTokenLength {
				continue
			}
			if _, err := Parse("c.yaml", []byte("http:\n  listen: \":8080\"\n  admin_token: \""+tok+"\"\n"+job0)); err != nil {
				t.Errorf("random admin_token refused: %v", err)
			}
		}
	}
}
