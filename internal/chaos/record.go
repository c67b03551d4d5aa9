package chaos

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Environment of the recorder. A job's command is the chaos binary (or the
// test binary) itself with EnvRecord=1: MaybeRecord then runs the recorder
// instead of main.
const (
	EnvRecord     = "CHAOS_RECORD"      // "1": run as the recorder
	EnvRecordFile = "CHAOS_RECORD_FILE" // per-replica JSON-lines file, appended with O_APPEND
	EnvFenceURL   = "CHAOS_FENCE_URL"   // base URL of the Fence
	EnvHold       = "CHAOS_HOLD"        // how long the job runs (Go duration)
	EnvReplica    = "CHAOS_REPLICA"     // replica name
	// EnvHoldMax, if set and above EnvHold, makes the run last a duration
	// in [EnvHold, EnvHoldMax] drawn from the job and tick (see holdFor).
	EnvHoldMax = "CHAOS_HOLD_MAX"
)

// Event is one line of a record file: a run's start, or its end.
type Event struct {
	Kind    string    `json:"kind"` // "start" or "end"
	Job     string    `json:"job"`
	Tick    string    `json:"tick"` // CRONLOCK_TICK as given (RFC 3339)
	Token   uint64    `json:"token"`
	Attempt int       `json:"attempt"`
	Owner   string    `json:"owner"`
	Replica string    `json:"replica"`
	PID     int       `json:"pid"`
	Time    time.Time `json:"time"`
	// Status of an end: "ok", "fenced" (the fence rejected the token),
	// "signal" (SIGTERM/SIGINT), "error" (the fence was unreachable).
	Status string `json:"status,omitempty"`
}

// MaybeRecord runs the recorder and exits if the process was started as a
// job (EnvRecord=1); otherwise it returns at once. Call it first in main and
// in TestMain.
func MaybeRecord() {
	if os.Getenv(EnvRecord) != "1" {
		return
	}
	os.Exit(record())
}

// record is the job: it appends a start line, writes to the fenced
// resource (at once, every 100 ms while it holds, and a last time before it
// ends, so any run that outlives its lease and overlaps a newer holder
// writes after the newer one did and is rejected), then appends an end line.
func record() int {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	tok, _ := strconv.ParseUint(os.Getenv("CRONLOCK_TOKEN"), 10, 64)
	att, _ := strconv.Atoi(os.Getenv("CRONLOCK_ATTEMPT"))
	hold, _ := time.ParseDuration(os.Getenv(EnvHold))
	holdMax, _ := time.ParseDuration(os.Getenv(EnvHoldMax))
	hold = holdFor(os.Getenv("CRONLOCK_JOB"), os.Getenv("CRONLOCK_TICK"), hold, holdMax)
	ev := Event{
		Job:     os.Getenv("CRONLOCK_JOB"),
		Tick:    os.Getenv("CRONLOCK_TICK"),
		Token:   tok,
		Attempt: att,
		Owner:   os.Getenv("CRONLOCK_OWNER"),
		Replica: os.Getenv(EnvReplica),
		PID:     os.Getpid(),
	}
	f, err := os.OpenFile(os.Getenv(EnvRecordFile), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos record:", err)
		return 2
	}
	defer f.Close()
	write := func(kind, status string) {
		e := ev
		e.Kind, e.Status, e.Time = kind, status, time.Now()
		b, _ := json.Marshal(e)
		f.Write(append(b, '\n')) // one write(2) with O_APPEND: lines never interleave
	}
	write("start", "")
	// SIGTERM ends the run at once, whatever it is doing (even waiting
	// for the fence), so the end line is written well within the grace.
	var once sync.Once
	finish := func(kind, status string, code int) {
		once.Do(func() {
			write(kind, status)
			os.Exit(code)
		})
	}
	go func() {
		<-sig
		finish("end", "signal", 143)
	}()
	client := &http.Client{Timeout: 2 * time.Second}
	touch := func() (ok bool, err error) {
		q := url.Values{}
		q.Set("job", ev.Job)
		q.Set("token", strconv.FormatUint(ev.Token, 10))
		q.Set("tick", ev.Tick)
		q.Set("replica", ev.Replica)
		q.Set("pid", strconv.Itoa(ev.PID))
		resp, err := client.Get(os.Getenv(EnvFenceURL) + "/touch?" + q.Encode())
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	}
	end := func(ok bool, err error) int {
		switch {
		case err != nil:
			finish("end", "error", 4)
		case !ok:
			finish("end", "fenced", 3)
		}
		finish("end", "ok", 0)
		return 0
	}
	if ok, err := touch(); err != nil || !ok {
		return end(ok, err)
	}
	deadline := time.Now().Add(hold)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		time.Sleep(min(left, 100*time.Millisecond))
		if time.Until(deadline) <= 0 {
			break
		}
		if ok, err := touch(); err != nil || !ok {
			return end(ok, err)
		}
	}
	return end(touch())
}

// Record is one job run as recorded: a start and, unless the run was killed,
// an end.
type Record struct {
	Job     string    `json:"job"`
	Tick    time.Time `json:"tick"`
	Token   uint64    `json:"token"`
	Attempt int       `json:"attempt"`
	Replica string    `json:"replica"`
	PID     int       `json:"pid"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end,omitzero"` // zero: no end line (killed)
	Status  string    `json:"status"`       // end status, or "" without end
}

// Key identifies a run: PIDs are reused, so (replica, pid, job, tick).
func (r Record) Key() string {
	return RunKey(r.Replica, r.PID, r.Job, r.Tick)
}

// RunKey is Record.Key from its parts.
func RunKey(replica string, pid int, job string, tick time.Time) string {
	return fmt.Sprintf("%s/%d/%s/%s", replica, pid, job, tick.UTC().Format(time.RFC3339))
}

// ReadRecords reads every *.jsonl file in dir and pairs start and end lines
// by (replica, pid). A torn last line (the writer was killed mid-write) is
// skipped.
func ReadRecords(dir string) ([]Record, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return nil, err
	}
	var evs []Event
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if e, ok := parseEvent(sc.Bytes()); ok {
				evs = append(evs, e)
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	return PairEvents(evs)
}

// parseEvent reads one line of a records file. A job killed by SIGKILL
// while it writes its end line can leave part of it: Linux cuts a write(2)
// to a file short when a fatal signal comes between its pages. The next
// line written then follows the torn part on the same line; it is read
// from its own opening, and the torn part (a killed run, which has no end)
// is dropped.
func parseEvent(line []byte) (Event, bool) {
	var e Event
	if json.Unmarshal(line, &e) == nil {
		return e, true
	}
	i := bytes.LastIndex(line, []byte(`{"kind":`))
	if i <= 0 {
		return Event{}, false
	}
	e = Event{}
	return e, json.Unmarshal(line[i:], &e) == nil
}

// PairEvents turns start and end events into runs, sorted by start.
func PairEvents(evs []Event) ([]Record, error) {
	type key struct {
		replica string
		pid     int
		job     string
		tick    string
	}
	runs := map[key]*Record{}
	var order []key
	for _, e := range evs {
		k := key{e.Replica, e.PID, e.Job, e.Tick}
		r := runs[k]
		if r == nil {
			tick, err := time.Parse(time.RFC3339Nano, e.Tick)
			if err != nil {
				return nil, fmt.Errorf("chaos: record of job %q: bad tick %q: %v", e.Job, e.Tick, err)
			}
			r = &Record{Job: e.Job, Tick: tick.UTC(), Token: e.Token, Attempt: e.Attempt, Replica: e.Replica, PID: e.PID}
			runs[k] = r
			order = append(order, k)
		}
		switch e.Kind {
		case "start":
			r.Start = e.Time
		case "end":
			r.End, r.Status = e.Time, e.Status
		}
	}
	out := make([]Record, 0, len(order))
	for _, k := range order {
		out = append(out, *runs[k])
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out, nil
}

// holdFor is how long the run of job's tick lasts: hold, or with
// holdMax > hold a duration in [hold, holdMax] drawn from a hash of job and
// tick, so a replay of a seed runs each tick as long as before.
func holdFor(job, tick string, hold, holdMax time.Duration) time.Duration {
	if holdMax <= hold {
		return hold
	}
	f := fnv.New64a()
	f.Write([]byte(job + "\x00" + tick))
	return hold + time.Duration(f.Sum64()%uint64(holdMax-hold+1))
}

// RecorderEnv is the job environment that makes the binary at path a
// recorder writing to file.
func RecorderEnv(file, fenceURL, replica string, hold time.Duration) map[string]string {
	return map[string]string{
		EnvRecord:     "1",
		EnvRecordFile: file,
		EnvFenceURL:   fenceURL,
		EnvHold:       hold.String(),
		EnvReplica:    replica,
		// A recorder built with -race (the test binary, in CI) would
		// otherwise sleep a second after its end line before exiting,
		// holding the job's lock and group slot: the run would last a
		// second longer than its records say.
		"GORACE": "atexit_sleep_ms=0",
	}
}
