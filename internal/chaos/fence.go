package chaos

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// FenceDecision is one request to the fenced resource and its answer.
type FenceDecision struct {
	Time    time.Time `json:"time"`
	Job     string    `json:"job"`
	Tick    string    `json:"tick"`
	Token   uint64    `json:"token"`
	Replica string    `json:"replica"`
	PID     int       `json:"pid"`
	OK      bool      `json:"ok"`
	Max     uint64    `json:"max"` // highest token seen before this request
}

// Fence is a fenced resource keyed by job: a write carrying a token lower
// than the highest the job's resource has seen is rejected. It serves HTTP
// on loopback: GET /touch?job=J&token=N&tick=T&replica=R&pid=P answers 200
// (accepted) or 409 (stale token).
type Fence struct {
	ln  net.Listener
	srv *http.Server

	mu  sync.Mutex
	max map[string]uint64
	log []FenceDecision
}

// NewFence starts a fence on a free loopback port.
func NewFence() (*Fence, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("chaos: fence listen: %w", err)
	}
	f := &Fence{ln: ln, max: map[string]uint64{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/touch", f.handle)
	f.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go f.srv.Serve(ln)
	return f, nil
}

// URL is the fence's base URL.
func (f *Fence) URL() string { return "http://" + f.ln.Addr().String() }

func (f *Fence) handle(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	tok, err := strconv.ParseUint(q.Get("token"), 10, 64)
	if err != nil || q.Get("job") == "" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	pid, _ := strconv.Atoi(q.Get("pid"))
	if f.Touch(q.Get("job"), tok, q.Get("tick"), q.Get("replica"), pid) {
		w.WriteHeader(http.StatusOK)
		return
	}
	w.WriteHeader(http.StatusConflict)
}

// Touch applies a write with token to job's resource and reports whether it
// was accepted (token ≥ the highest seen).
func (f *Fence) Touch(job string, token uint64, tick, replica string, pid int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.max[job]
	ok := token >= m
	if ok {
		f.max[job] = token
	}
	f.log = append(f.log, FenceDecision{Time: time.Now(), Job: job, Tick: tick, Token: token, Replica: replica, PID: pid, OK: ok, Max: m})
	return ok
}

// Log returns a copy of every decision so far.
func (f *Fence) Log() []FenceDecision {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]FenceDecision(nil), f.log...)
}

// Close stops the server.
func (f *Fence) Close() error { return f.srv.Close() }
