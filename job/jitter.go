package job

import (
	"encoding/binary"
	"hash/fnv"
	"time"
)

// TickJitter is the delay in [0, max) of the job called name at tick: a
// hash of both, so every replica computes the same delay for a (job, tick)
// and different jobs on one schedule spread over the window. 0 when max is
// not positive.
func TickJitter(name string, tick time.Time, max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(name))
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(tick.UnixNano()))
	h.Write(b[:])
	return time.Duration(h.Sum64() % uint64(max))
}
