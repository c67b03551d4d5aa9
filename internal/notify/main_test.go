package notify

import (
	"os"
	"testing"

	"github.com/cronlock/cronlock/internal/proc"
)

// TestMain lets command targets run: internal/proc re-executes the test
// binary as its supervisor.
func TestMain(m *testing.M) {
	proc.Init()
	os.Exit(m.Run())
}
