// Package testrun holds what several packages' TestMain share. It is for
// tests only; the product never imports it.
package testrun

import (
	"flag"
	"strconv"
)

// MinParallel raises -test.parallel to min unless the command line set it.
// It is for packages whose parallel tests spend their time waiting (for
// cron ticks in whole seconds, leases, child processes), not computing:
// the default of GOMAXPROCS (2 on the CI machine) would serialise minutes
// of waiting. Call it from TestMain before m.Run; it parses the flags.
func MinParallel(min int) {
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	p := flag.Lookup("test.parallel")
	if p == nil || explicit {
		return
	}
	if n, err := strconv.Atoi(p.Value.String()); err == nil && n < min {
		_ = p.Value.Set(strconv.Itoa(min))
	}
}
