package registry

import (
	"encoding/json"
	"regexp"
	"testing"
	"time"
)

// TestAnnouncementFormat: the announcement is a stored format that
// replicas of other releases read: its JSON is byte for byte this, and
// its TTL 6 s.
func TestAnnouncementFormat(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	off := 0.25
	data, err := json.Marshal(Replica{ID: "host:1", Host: "h", PID: 7, Version: "v1", Started: at,
		Running: []string{"a"}, ClockOffsetSeconds: &off, Seen: at})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"host:1","host":"h","pid":7,"version":"v1","started":"2026-06-01T12:00:00Z","running":["a"],` +
		`"clock_offset_seconds":0.25,"seen":"2026-06-01T12:00:00Z"}`
	if string(data) != want {
		t.Errorf("announcement\n%s\nwant\n%s", data, want)
	}
	if TTL != 6*time.Second { // replicas of other releases judge liveness by it too
		t.Errorf("TTL %v, want 6s", TTL)
	}
}

// TestKeyFor: any id maps to a valid KV key, distinct ids to distinct
// keys even where their cleaned forms agree.
func TestKeyFor(t *testing.T) {
	t.Parallel()
	valid := regexp.MustCompile(`^[-_A-Za-z0-9]+$`)
	a, b := keyFor("host:1"), keyFor("host_1")
	for _, k := range []string{a, b, keyFor("ünïcode/äll.of it")} {
		if !valid.MatchString(k) {
			t.Errorf("key %q is not a valid KV key", k)
		}
	}
	if a == b {
		t.Errorf("ids host:1 and host_1 share key %q", a)
	}
}
