package monitoring

import (
	"os"
	"testing"

	"github.com/cronlock/cronlock/internal/proc"
)

func TestMain(m *testing.M) {
	proc.Init() // the daemon of TestMonitoringMetricsExist runs its job's command in-process
	os.Exit(m.Run())
}
