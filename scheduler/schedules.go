package scheduler

import (
	"sync"
	"time"

	"github.com/cronlock/cronlock/job"
)

// scheduleCache shares parsed schedules between the jobs of one
// job.Job.ScheduleKey (the spec, or the specs with their excluded dates and
// window) in one location: a replica holding 100,000 jobs kept 100,000 parsed copies of a
// few thousand distinct specs (9 MB). job.Schedule values are immutable and
// safe for concurrent use (its contract), so jobs can share one. The key is
// the location's pointer, not its name: two locations of one name may
// differ (time.FixedZone), and the config loads each zone once per file.
// Bounded like gapCache: beyond scheduleCacheMax distinct keys it starts
// anew, and the jobs keep the schedules they were given.
type scheduleCache struct {
	mu    sync.Mutex
	byKey map[scheduleKey]job.Schedule
}

type scheduleKey struct {
	spec string
	loc  *time.Location
}

const scheduleCacheMax = 4096

// parse is j.ParsedSchedule, shared with the jobs parsed before it.
func (c *scheduleCache) parse(j job.Job) (job.Schedule, error) {
	key := scheduleKey{spec: j.ScheduleKey(), loc: j.Location}
	if key.loc == nil {
		key.loc = time.UTC // ParseSchedule's default
	}
	c.mu.Lock()
	s, ok := c.byKey[key]
	c.mu.Unlock()
	if ok {
		return s, nil
	}
	s, err := j.ParsedSchedule()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byKey == nil || len(c.byKey) >= scheduleCacheMax {
		c.byKey = map[scheduleKey]job.Schedule{}
	}
	c.byKey[key] = s
	return s, nil
}
