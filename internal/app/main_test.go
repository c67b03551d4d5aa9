package app_test

import (
	"os"
	"testing"

	"github.com/cronlock/cronlock/internal/proc"
)

func TestMain(m *testing.M) {
	proc.Init() // the tests run job commands in-process
	os.Exit(m.Run())
}
