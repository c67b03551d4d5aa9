package notify

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/cronlock/cronlock/scheduler"
)

// testRun is a failed run of job "backup" that took 1.5 s.
func testRun(status scheduler.RunStatus) scheduler.Run {
	tick := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	return scheduler.Run{
		Job: "backup", Tick: tick, Owner: "host-a:123", Token: 42, Attempts: 2,
		Start: tick.Add(10 * time.Millisecond), End: tick.Add(1510 * time.Millisecond),
		Status: status, Error: "exit status 3",
	}
}

func TestPayloadJSON(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(NewPayload(EventFailure, testRun(scheduler.StatusFailed)))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	keys := []string{"event", "job", "tick", "manual", "status", "reason", "attempts", "start", "end",
		"duration_seconds", "exit_code", "error", "output", "owner", "token"}
	if k := slices.Sorted(maps.Keys(got)); !slices.Equal(k, slices.Sorted(slices.Values(keys))) {
		t.Errorf("keys = %v, want %v", k, keys)
	}
	want := map[string]any{
		"event": "failure", "job": "backup", "tick": "2026-11-30T12:00:00Z", "manual": false,
		"status": "failed", "reason": "", "attempts": 2.0, "start": "2026-11-30T12:00:00.01Z",
		"end": "2026-11-30T12:00:01.51Z", "duration_seconds": 1.5, "exit_code": nil,
		"error": "exit status 3", "output": "", "owner": "host-a:123", "token": 42.0,
	}
	if !maps.Equal(got, want) {
		t.Errorf("payload\n got %v\nwant %v", got, want)
	}
}

func TestPayloadOfMissedRunHasNullTimes(t *testing.T) {
	t.Parallel()
	r := scheduler.Run{Job: "backup", Tick: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Status: scheduler.StatusMissed, Error: "3 ticks missed"}
	b, err := json.Marshal(NewPayload(EventMissed, r))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]any{"start": nil, "end": nil, "duration_seconds": 0.0, "exit_code": nil, "event": "missed"} {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}
