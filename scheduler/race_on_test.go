//go:build race

package scheduler_test

// raceEnabled: the race detector multiplies the CPU cost of every NATS
// round trip, on this process's embedded server too.
const raceEnabled = true
