package scheduler_test

import (
	"os"
	"testing"

	"github.com/cronlock/cronlock/internal/testrun"
)

// minParallel is how many parallel tests of this package run at once
// unless -parallel says otherwise (see testrun.MinParallel). The
// CPU-sensitive tests (clock skew, jitter, goleak) are not parallel: they
// run alone, before these.
const minParallel = 4

func TestMain(m *testing.M) {
	testrun.MinParallel(minParallel)
	os.Exit(m.Run())
}
