//go:build !unix

package app

import "os"

// tryLock does not lock where flock is unavailable; cronlock runs jobs only
// on Linux anyway (see internal/proc).
func tryLock(*os.File) (bool, error) { return true, nil }
