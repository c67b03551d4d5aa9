//go:build !linux

package chaos

import "time"

// watchExit is only implemented on Linux; elsewhere the tracker's polling
// alone dates a vanished run's end.
func watchExit(pid int, exited func(time.Time)) bool { return false }
