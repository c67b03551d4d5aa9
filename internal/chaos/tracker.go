package chaos

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"sync"
	"time"
)

// tracker follows the record files as they grow, to know which runs are in
// progress (for kill-mid-run and for picking the holder of a long job).
type tracker struct {
	mu      sync.Mutex
	files   map[string]int64 // file → offset read
	partial map[string][]byte
	running map[int]Event // pid → start without end yet (a pid runs one job at a time)
	// vanished: pid → when a run's process was first seen gone without
	// having written its end line (killed: by a replica kill, or by
	// cronlock's SIGKILL after the grace).
	vanished map[string]time.Time // by Record.Key
	// exited: Record.Key → when the run's process exited, as watchExit
	// saw it (more precise than vanished, which the polling dates).
	exited map[string]time.Time
}

func newTracker() *tracker {
	return &tracker{files: map[string]int64{}, partial: map[string][]byte{}, running: map[int]Event{}, vanished: map[string]time.Time{}, exited: map[string]time.Time{}}
}

func (t *tracker) add(file string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.files[file] = 0
}

// poll reads what was appended since the last poll.
func (t *tracker) poll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for name, off := range t.files {
		f, err := os.Open(name)
		if err != nil {
			continue
		}
		f.Seek(off, io.SeekStart)
		b, _ := io.ReadAll(f)
		f.Close()
		t.files[name] = off + int64(len(b))
		b = append(t.partial[name], b...)
		for {
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				break
			}
			var e Event
			if json.Unmarshal(b[:i], &e) == nil {
				if e.Kind == "start" {
					t.running[e.PID] = e
					t.watch(e)
				} else {
					delete(t.running, e.PID)
				}
			}
			b = b[i+1:]
		}
		t.partial[name] = append([]byte(nil), b...)
	}
}

// watch records when the process of the run that e starts exits. Called
// with t.mu held; the callback takes it.
func (t *tracker) watch(e Event) {
	tick, err := time.Parse(time.RFC3339Nano, e.Tick)
	if err != nil {
		return
	}
	key := RunKey(e.Replica, e.PID, e.Job, tick)
	watchExit(e.PID, func(at time.Time) {
		t.mu.Lock()
		defer t.mu.Unlock()
		t.exited[key] = at
	})
}

// inProgress returns the runs started and not ended whose process is alive.
func (t *tracker) inProgress() []Event {
	t.poll()
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Event
	for pid, e := range t.running {
		if !Alive(pid) {
			delete(t.running, pid)
			if tick, err := time.Parse(time.RFC3339Nano, e.Tick); err == nil {
				t.vanished[RunKey(e.Replica, e.PID, e.Job, tick)] = time.Now()
			}
			continue
		}
		out = append(out, e)
	}
	return out
}

// vanishedAt returns when each vanished run's process was gone: the exit
// time watchExit saw, or else when polling first missed it.
func (t *tracker) vanishedAt() map[string]time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]time.Time, len(t.vanished))
	for k, v := range t.vanished {
		if x, ok := t.exited[k]; ok && x.Before(v) {
			v = x
		}
		out[k] = v
	}
	return out
}
