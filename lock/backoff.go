package lock

import (
	"math/rand/v2"
	"time"
)

// backoff returns the wait before retry n (0-based): full jitter over
// [base, min(max, base·2ⁿ)], so contending clients spread out instead of
// retrying in step.
func backoff(n int, base, max time.Duration) time.Duration {
	ceil := base
	for i := 0; i < n && ceil < max; i++ {
		ceil *= 2
	}
	if ceil > max {
		ceil = max
	}
	if ceil <= base {
		return base
	}
	return base + rand.N(ceil-base+1)
}
