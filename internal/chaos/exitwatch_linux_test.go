package chaos

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

func TestWatchExitDatesAKill(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	got := make(chan time.Time, 1)
	if !watchExit(cmd.Process.Pid, func(at time.Time) { got <- at }) {
		t.Fatal("cannot watch a live process")
	}
	select {
	case at := <-got:
		t.Fatalf("exit reported at %v while the process runs", at)
	case <-time.After(100 * time.Millisecond):
	}
	killed := time.Now()
	syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
	select {
	case at := <-got:
		if at.Before(killed) {
			t.Fatalf("exit at %v, before the kill at %v", at, killed)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("exit not reported within 10s")
	}
	cmd.Wait()
	if watchExit(cmd.Process.Pid, func(time.Time) {}) {
		t.Error("watching a reaped pid succeeded")
	}
}
