package chaos

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	MaybeRecord()
	os.Exit(m.Run())
}

// job runs this test binary as the recorder, as cronlock would.
func job(t *testing.T, f *Fence, file, name string, token uint64, hold time.Duration) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = os.Environ()
	for k, v := range RecorderEnv(file, f.URL(), "r1", hold) {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env, "CRONLOCK_JOB="+name, "CRONLOCK_TICK=2026-11-29T12:00:01Z",
		"CRONLOCK_TOKEN="+strconv.FormatUint(token, 10), "CRONLOCK_ATTEMPT=1", "CRONLOCK_OWNER=r1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// waitTouched waits until the fence has accepted a write of job: the
// recorder has written its start line, handles signals, and holds.
func waitTouched(t *testing.T, f *Fence, job string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, d := range f.Log() {
			if d.Job == job && d.OK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no accepted write at the fence within 10s", job)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRecorder(t *testing.T) {
	f, err := NewFence()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dir := t.TempDir()
	file := filepath.Join(dir, "r1.jsonl")

	// A normal short run.
	if err := job(t, f, file, "short", 10, 5*time.Millisecond).Wait(); err != nil {
		t.Fatalf("short run: %v", err)
	}
	// A long run, then a newer holder: the long one is fenced out.
	long := job(t, f, file, "long", 20, 5*time.Second)
	waitTouched(t, f, "long")
	if !f.Touch("long", 21, "", "r2", 1) {
		t.Fatal("newer token rejected")
	}
	err = long.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Fatalf("fenced run: %v, want exit 3", err)
	}
	// SIGTERM: an end line with status signal.
	term := job(t, f, file, "term", 30, 5*time.Second)
	waitTouched(t, f, "term")
	term.Process.Signal(syscall.SIGTERM)
	term.Wait()
	// SIGKILL: a start without end.
	kill := job(t, f, file, "kill", 40, 5*time.Second)
	waitTouched(t, f, "kill")
	kill.Process.Kill()
	kill.Wait()

	runs, err := ReadRecords(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"short": "ok", "long": "fenced", "term": "signal", "kill": ""}
	if len(runs) != len(want) {
		t.Fatalf("got %d runs: %+v", len(runs), runs)
	}
	for _, r := range runs {
		if r.Status != want[r.Job] {
			t.Errorf("%s: status %q, want %q", r.Job, r.Status, want[r.Job])
		}
		if r.Start.IsZero() || r.Replica != "r1" || r.PID == 0 || r.Tick.IsZero() {
			t.Errorf("%s: incomplete record %+v", r.Job, r)
		}
		if (r.Status == "") != r.End.IsZero() {
			t.Errorf("%s: end %v with status %q", r.Job, r.End, r.Status)
		}
	}
	// A torn line is skipped.
	fh, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteString(`{"kind":"start","job":"x`); err != nil {
		t.Fatal(err)
	}
	if err := fh.Close(); err != nil {
		t.Fatal(err)
	}
	if runs2, err := ReadRecords(dir); err != nil || len(runs2) != len(runs) {
		t.Fatalf("torn line: %d runs, %v", len(runs2), err)
	}
}

// A run killed while writing its end line leaves a torn line, which the
// next run's start line follows: that start is still read, and the killed
// run has no end.
func TestTornEndLineKeepsTheNextStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	lines := `{"kind":"start","job":"long.b","tick":"2026-12-07T11:05:58Z","replica":"r1","pid":1,"time":"2026-12-07T11:05:58.2Z"}
{"kind":"end","job":"long.b","tick":"2026-12-07T11:05:58Z{"kind":"start","job":"tick.b","tick":"2026-12-07T11:06:07Z","replica":"r1","pid":2,"time":"2026-12-07T11:06:07.04Z"}
{"kind":"end","job":"tick.b","tick":"2026-12-07T11:06:07Z","replica":"r1","pid":2,"time":"2026-12-07T11:06:07.05Z","status":"ok"}
`
	if err := os.WriteFile(filepath.Join(dir, "r1.jsonl"), []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	recs, err := ReadRecords(dir)
	if err != nil {
		t.Fatal(err)
	}
	ended := map[string]bool{}
	for _, r := range recs {
		ended[r.Job] = !r.End.IsZero()
	}
	if len(recs) != 2 || ended["long.b"] || !ended["tick.b"] {
		t.Fatalf("records %+v: want long.b without an end and tick.b with one", recs)
	}
}
