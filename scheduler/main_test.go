package scheduler_test

import (
	"flag"
	"os"
	"strconv"
	"testing"
)

// minParallel is how many parallel tests of this package run at once
// unless -parallel says otherwise. They spend their time waiting for cron
// ticks (whole seconds) and leases, not computing, so the default of
// GOMAXPROCS (2 on the CI machine) would serialise over two minutes of
// waiting. The CPU-sensitive tests (clock skew, jitter, goleak) are not
// parallel: they run alone, before these.
const minParallel = 4

func TestMain(m *testing.M) {
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if p := flag.Lookup("test.parallel"); p != nil && !explicit {
		if n, err := strconv.Atoi(p.Value.String()); err == nil && n < minParallel {
			_ = p.Value.Set(strconv.Itoa(minParallel))
		}
	}
	os.Exit(m.Run())
}
