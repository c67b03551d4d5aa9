//go:build !unix

package app

// openFileLimit: no descriptor limit is known here.
func openFileLimit() (uint64, bool) { return 0, false }
