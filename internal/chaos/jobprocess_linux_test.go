package chaos

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
)

// JobProcessAlive: a live child running the executable is alive; the same
// process after it is reaped is not; a thread of this process, whose id
// /proc answers for as for a process, is not a job process, though its
// executable is the recorder's (the harness is the jobs' recorder).
func TestJobProcessAlive(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep(1)")
	}
	sleep, _ = filepath.EvalSymlinks(sleep)
	cmd := exec.Command(sleep, "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if !JobProcessAlive(pid, sleep) {
		t.Errorf("a running %s (pid %d) is not alive", sleep, pid)
	}
	if JobProcessAlive(pid, "/not/the/recorder") {
		t.Errorf("pid %d counts as running another executable", pid)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if JobProcessAlive(pid, sleep) {
		t.Errorf("pid %d alive after it was killed and reaped", pid)
	}

	runtime.LockOSThread() // at least one thread besides the main one
	defer runtime.UnlockOSThread()
	self, _ := os.Executable()
	self, _ = filepath.EvalSymlinks(self)
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	threads := 0
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		if tid == os.Getpid() {
			continue
		}
		threads++
		if !Alive(tid) {
			t.Fatalf("thread %d not even Alive: the test proves nothing", tid)
		}
		if JobProcessAlive(tid, self) {
			t.Errorf("thread %d of this process counts as a live job process", tid)
		}
	}
	if threads == 0 {
		t.Fatal("no thread besides the main one: the test proves nothing")
	}
}
