// Command runtimejobs measures runtime jobs with the built binary: how long
// a put and a delete take to be seen by every replica (p50, p99), and what
// a replica holding many runtime jobs costs (memory, start-up to ready).
//
//	go build -o /tmp/cronlock ./cmd/cronlock
//	go run ./bench/runtimejobs -bin /tmp/cronlock -replicas 3 -changes 200 -preload 100000
//
// It starts a nats-server in the process (JetStream on a temporary
// directory) and the replicas as `cronlock run` processes with runtime jobs
// enabled. -preload puts that many definitions (with `cronlock jobs put`)
// before the replicas start, so their start-up and memory include them.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

const token = "bench-admin-token-0123456789abcdef"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "runtimejobs:", err)
		os.Exit(1)
	}
}

type bench struct {
	bin, dir, url string
	replicas      []*replica
}

type replica struct {
	cmd  *exec.Cmd
	log  *os.File
	base string
}

func run() error {
	bin := flag.String("bin", "", "the cronlock binary (required)")
	n := flag.Int("replicas", 3, "replicas")
	changes := flag.Int("changes", 200, "puts (and as many deletes) whose propagation is measured")
	preload := flag.Int("preload", 0, "runtime jobs put before the replicas start")
	settle := flag.Duration("settle", 15*time.Second, "wait after every replica is ready before reading their memory")
	flag.Parse()
	if *bin == "" {
		return errors.New("-bin is required")
	}
	dir, err := os.MkdirTemp("", "cronlock-rtbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT,
		JetStream: true, StoreDir: filepath.Join(dir, "js"), NoLog: true, NoSigs: true})
	if err != nil {
		return err
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		return errors.New("nats-server not ready")
	}
	defer ns.Shutdown()
	b := &bench{bin: *bin, dir: dir, url: ns.ClientURL()}
	if *preload > 0 {
		if err := b.preload(*preload); err != nil {
			return err
		}
	}
	started := time.Now()
	for i := range *n {
		r, err := b.start(i)
		if err != nil {
			return err
		}
		defer r.stop()
		b.replicas = append(b.replicas, r)
	}
	for _, r := range b.replicas {
		if err := r.awaitReady(5 * time.Minute); err != nil {
			return err
		}
	}
	fmt.Printf("replicas=%d preloaded=%d ready_all=%.2fs\n", *n, *preload, time.Since(started).Seconds())
	time.Sleep(*settle)
	for i, r := range b.replicas {
		fmt.Printf("replica %d: rss=%dMB\n", i, rssMB(r.cmd.Process.Pid))
	}
	return b.propagation(*changes)
}

// config is a replica's configuration.
func (b *bench) config(i int) string {
	path := filepath.Join(b.dir, fmt.Sprintf("r%d.yaml", i))
	os.WriteFile(path, []byte(fmt.Sprintf(`
nats: {url: %s}
lock: {owner: r%d}
http: {listen: "127.0.0.1:0", admin_token: %s}
log: {level: info}
config_watch: false
runtime_jobs: {enabled: true}
kinds: [{name: k, command: ["true"]}]
`, b.url, i, token)), 0o600)
	return path
}

// preload puts n definitions, daily at spread times in four zones, with
// `cronlock jobs put` (the CLI's own concurrency).
func (b *bench) preload(n int) error {
	var sb strings.Builder
	sb.WriteString("jobs:\n")
	zones := []string{"Europe/Berlin", "America/New_York", "Asia/Tokyo", "UTC"}
	for i := range n {
		fmt.Fprintf(&sb, "  - {name: t%d.report, schedule: '%d %d * * *', timezone: %s, kind: k, payload: {tenant: t%d}}\n", i, i%60, i/60%24, zones[i%4], i)
	}
	defs := filepath.Join(b.dir, "defs.yaml")
	if err := os.WriteFile(defs, []byte(sb.String()), 0o600); err != nil {
		return err
	}
	t0 := time.Now()
	out, err := exec.Command(b.bin, "jobs", "put", "-c", b.config(99), "-f", defs).CombinedOutput()
	if err != nil {
		return fmt.Errorf("jobs put: %v: %s", err, tail(out))
	}
	d := time.Since(t0)
	fmt.Printf("preload: %d definitions put in %.1fs (%.0f/s)\n", n, d.Seconds(), float64(n)/d.Seconds())
	return nil
}

func tail(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 500 {
		s = s[len(s)-500:]
	}
	return s
}

var addrRe = regexp.MustCompile(`"addr":"([^"]+)"`)

// start runs replica i and waits for its HTTP address.
func (b *bench) start(i int) (*replica, error) {
	logf, err := os.Create(filepath.Join(b.dir, fmt.Sprintf("r%d.log", i)))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(b.bin, "run", "-c", b.config(i))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	r := &replica{cmd: cmd, log: logf}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		data, _ := os.ReadFile(logf.Name())
		if m := addrRe.FindSubmatch(data); m != nil {
			r.base = "http://" + string(m[1])
			return r, nil
		}
	}
	r.stop()
	return nil, fmt.Errorf("replica %d: no HTTP address in its log", i)
}

func (r *replica) stop() {
	r.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { r.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		r.cmd.Process.Kill()
	}
	r.log.Close()
}

func (r *replica) awaitReady(d time.Duration) error {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if code, _ := get(r.base + "/readyz"); code == 200 {
			return nil
		}
	}
	return fmt.Errorf("%s not ready within %v", r.base, d)
}

var client = &http.Client{Timeout: 5 * time.Second}

func get(url string) (int, error) {
	resp, err := client.Get(url)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

func send(method, url, body string) (int, error) {
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// propagation puts n jobs one at a time through the first replica's API and
// measures, for each, the time from the request until every replica
// answers GET /api/jobs/{name} with 200 (polled every 2 ms: an upper
// bound), then the same for deleting it (404).
func (b *bench) propagation(n int) error {
	var puts, dels []time.Duration
	for i := range n {
		name := fmt.Sprintf("prop.%d", i)
		def := fmt.Sprintf(`{"name": %q, "schedule": "0 0 1 1 *", "kind": "k"}`, name)
		d, err := b.until("PUT", name, def, 200)
		if err != nil {
			return err
		}
		puts = append(puts, d)
		if d, err = b.until("DELETE", name, "", 404); err != nil {
			return err
		}
		dels = append(dels, d)
	}
	fmt.Printf("put seen by all %d replicas: %s\n", len(b.replicas), quantiles(puts))
	fmt.Printf("delete seen by all %d replicas: %s\n", len(b.replicas), quantiles(dels))
	return nil
}

// until sends the change and waits until every replica's GET of the job
// answers want.
func (b *bench) until(method, name, body string, want int) (time.Duration, error) {
	t0 := time.Now()
	if code, err := send(method, b.replicas[0].base+"/api/jobs/"+name, body); err != nil || code != 200 {
		return 0, fmt.Errorf("%s %s: %d %v", method, name, code, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(b.replicas))
	for i, r := range b.replicas {
		wg.Go(func() {
			for ctx.Err() == nil {
				if code, _ := get(r.base + "/api/jobs/" + name); code == want {
					return
				}
				time.Sleep(2 * time.Millisecond)
			}
			errs[i] = fmt.Errorf("replica %d never answered %d for %s", i, want, name)
		})
	}
	wg.Wait()
	return time.Since(t0), errors.Join(errs...)
}

func quantiles(ds []time.Duration) string {
	slices.Sort(ds)
	q := func(p float64) time.Duration { return ds[min(len(ds)-1, int(p*float64(len(ds))))] }
	return fmt.Sprintf("n=%d p50=%v p99=%v max=%v", len(ds), q(0.5).Round(100*time.Microsecond),
		q(0.99).Round(100*time.Microsecond), ds[len(ds)-1].Round(100*time.Microsecond))
}

// rssMB is the process's resident set, from /proc (Linux).
func rssMB(pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			var kb int
			fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(l, "VmRSS:")), "%d", &kb)
			return kb / 1024
		}
	}
	return -1
}
