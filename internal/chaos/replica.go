package chaos

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Replica is one cronlock process (restarted as needed) and the proxies
// through which it reaches NATS.
type Replica struct {
	Name       string
	Bin        string
	ConfigFile string
	LogFile    string
	RecordFile string
	HTTPPort   int
	Net        *ProxyGroup

	mu       sync.Mutex
	cmd      *exec.Cmd
	done     chan struct{}
	expected bool // the current process is being stopped on purpose
	code     int  // exit code of the last process (-1: killed by a signal)
	problems []string
}

// Start starts a new cronlock process.
func (r *Replica) Start() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd != nil {
		select {
		case <-r.done:
		default:
			return nil
		}
	}
	logf, err := os.OpenFile(r.LogFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(logf, "\n=== chaos: start %s at %s\n", r.Name, time.Now().UTC().Format(time.RFC3339Nano))
	cmd := exec.Command(r.Bin, "run", "-c", r.ConfigFile)
	cmd.Env = append(os.Environ(), "CRONLOCK_CHECK_GOROUTINES=1")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = filepath.Dir(r.ConfigFile)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("chaos: start replica %s: %w", r.Name, err)
	}
	done := make(chan struct{})
	r.cmd, r.done, r.expected = cmd, done, false
	go func() {
		err := cmd.Wait()
		code := cmd.ProcessState.ExitCode()
		fmt.Fprintf(logf, "=== chaos: %s pid %d exited at %s: %v\n", r.Name, cmd.Process.Pid, time.Now().UTC().Format(time.RFC3339Nano), err)
		logf.Close()
		r.mu.Lock()
		r.code = code
		if !r.expected {
			r.problems = append(r.problems, fmt.Sprintf("%s pid %d exited by itself at %s: %v (log %s)", r.Name, cmd.Process.Pid, time.Now().Format(tsFmt), err, r.LogFile))
		}
		r.mu.Unlock()
		close(done)
	}()
	return nil
}

// PID is the current process's id, or 0.
func (r *Replica) PID() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return 0
	}
	return r.cmd.Process.Pid
}

// Running reports whether the process is alive (it may be stopped).
func (r *Replica) Running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return false
	}
	select {
	case <-r.done:
		return false
	default:
		return true
	}
}

// Kill sends SIGKILL and waits for the process to be gone.
func (r *Replica) Kill() {
	r.mu.Lock()
	cmd, done := r.cmd, r.done
	r.expected = true
	r.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// Terminate sends SIGTERM (and SIGCONT, in case it is stopped) and waits
// up to timeout for the exit; it returns the exit code (-1: killed after
// the timeout, or by a signal).
func (r *Replica) Terminate(timeout time.Duration) int {
	r.mu.Lock()
	cmd, done := r.cmd, r.done
	r.expected = true
	r.mu.Unlock()
	if cmd == nil {
		return 0
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Process.Signal(syscall.SIGCONT)
	select {
	case <-done:
	case <-time.After(timeout):
		r.mu.Lock()
		r.problems = append(r.problems, fmt.Sprintf("%s pid %d did not exit within %v of SIGTERM: killed", r.Name, cmd.Process.Pid, timeout))
		r.mu.Unlock()
		cmd.Process.Signal(syscall.SIGKILL)
		<-done
		return -1
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.code
}

// Signal sends sig to the process, and with tree to its descendants too
// (parents first for SIGSTOP, so none can start a new child unseen).
func (r *Replica) Signal(sig syscall.Signal, tree bool) []int {
	pid := r.PID()
	if pid == 0 {
		return nil
	}
	pids := []int{pid}
	if tree {
		pids = Descendants(pid)
	}
	if sig == syscall.SIGCONT {
		for i := len(pids) - 1; i >= 0; i-- {
			syscall.Kill(pids[i], sig)
		}
		return pids
	}
	for _, p := range pids {
		syscall.Kill(p, sig)
	}
	return pids
}

// Problems are the unexpected exits and failed shutdowns seen so far.
func (r *Replica) Problems() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.problems...)
}

func (r *Replica) addProblem(s string) {
	r.mu.Lock()
	r.problems = append(r.problems, s)
	r.mu.Unlock()
}

// Ready reports whether the replica answers its /readyz (or, if it has
// none, /healthz) with 200.
func (r *Replica) Ready() bool {
	for _, p := range []string{"/readyz", "/healthz"} {
		resp, err := monClient.Get(fmt.Sprintf("http://127.0.0.1:%d%s", r.HTTPPort, p))
		if err != nil {
			return false
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return true
		}
		if resp.StatusCode != http.StatusNotFound {
			return false
		}
	}
	return r.Running()
}

// WaitReady waits up to timeout for Ready.
func (r *Replica) WaitReady(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if r.Ready() {
			return true
		}
		if !r.Running() {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// Descendants returns pid and every descendant of it, parents first, from
// /proc.
func Descendants(pid int) []int {
	children := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp := ppid(p); pp > 0 {
			children[pp] = append(children[pp], p)
		}
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

func ppid(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0
	}
	p, _ := strconv.Atoi(f[1])
	return p
}

// JobProcessAlive reports whether pid is a live process (not a zombie)
// running the executable exe. Not a thread: /proc/<tid> answers for any
// thread id, and the harness, which is also the jobs' recorder, has
// threads whose ids the kernel may have given a job process before (a
// 30-minute soak recorded a job's pid that a harness thread got later,
// and reported the job alive after shutdown).
func JobProcessAlive(pid int, exe string) bool {
	if pid == os.Getpid() || !Alive(pid) || tgid(pid) != pid {
		return false
	}
	got, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	return strings.TrimSuffix(got, " (deleted)") == exe
}

// tgid is the thread group (process) of the thread id, 0 if unknown.
func tgid(id int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", id))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Tgid:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// Alive reports whether pid exists and is not a zombie.
func Alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	return s[i+2] != 'Z' && s[i+2] != 'X'
}

// ProcsOf lists live processes whose executable is one of bins, except self.
func ProcsOf(bins ...string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil || p == os.Getpid() {
			continue
		}
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", p))
		if err != nil {
			continue
		}
		exe = strings.TrimSuffix(exe, " (deleted)")
		for _, b := range bins {
			if exe == b && Alive(p) {
				cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
				out = append(out, fmt.Sprintf("pid %d (ppid %d) %s", p, ppid(p), strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " ")))
			}
		}
	}
	return out
}
