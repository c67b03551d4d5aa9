//go:build !unix

package notify

import "os/exec"

// setProcessGroup leaves cmd as it is: without Unix process groups only the
// command itself is killed when its context ends.
func setProcessGroup(*exec.Cmd) {}
