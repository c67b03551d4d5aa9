package chaos

import (
	"time"

	"golang.org/x/sys/unix"
)

// watchExit calls exited with the time process pid exits, as soon as it
// does (a pidfd becomes readable on exit), and reports whether it could
// watch it. Polling /proc every 50 ms only bounds a vanished run's end to
// within that period (longer on a loaded machine); the overlap check needs
// the end of a run that cronlock's shim SIGKILLed at the lease's local
// safe deadline to the millisecond, since the next holder may start a
// fraction of a lease later.
func watchExit(pid int, exited func(time.Time)) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return false
	}
	go func() {
		defer unix.Close(fd)
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			_, err := unix.Poll(fds, -1)
			if err == unix.EINTR {
				continue
			}
			exited(time.Now())
			return
		}
	}()
	return true
}
