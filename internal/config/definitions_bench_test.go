package config_test

import (
	"testing"

	"github.com/cronlock/cronlock/internal/config"
)

// BenchmarkParseDefinition is one runtime job's decode, as each replica
// does it for each definition it follows (100,000 at a start-up).
func BenchmarkParseDefinition(b *testing.B) {
	cfg, err := config.Parse("c.yaml", []byte(runtimeBase))
	if err != nil {
		b.Fatal(err)
	}
	def := []byte(`{"kind":"report","name":"t123.report","payload":{"tenant":"t123"},"schedule":"3 2 * * *","timezone":"Europe/Berlin"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := cfg.DecodeDefinition("runtime job t123.report revision 7", def); err != nil {
			b.Fatal(err)
		}
	}
}
