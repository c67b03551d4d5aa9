package job

import (
	"sync"
	"time"
)

// zones holds the zones LoadZone has loaded, by name.
var zones sync.Map

// LoadZone is time.LoadLocation, loaded once per process per name: every
// job of a zone gets the same *time.Location. A Location holds the zone's
// transitions (several KB), so 100,000 jobs each loading their own took
// hundreds of MB; and a scheduler shares the parsed schedules of jobs
// with the same spec and location. "Local" is not cached: it is the
// host's zone.
func LoadZone(name string) (*time.Location, error) {
	if loc, ok := zones.Load(name); ok {
		return loc.(*time.Location), nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, err
	}
	if name != "Local" {
		zones.Store(name, loc)
	}
	return loc, nil
}
