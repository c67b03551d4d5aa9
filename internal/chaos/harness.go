package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Config configures one run of the harness.
type Config struct {
	Seed     uint64
	Duration time.Duration // how long faults are injected
	// Short injects every fault kind once, in an order drawn from Seed,
	// with short gaps (CI); otherwise kinds are drawn at random until
	// Duration has passed.
	Short    bool
	Dir      string // work directory (binaries, configs, logs, records)
	Replicas int    // default 5
	Lease    time.Duration
	Renew    time.Duration
	// Repo is the module root, for building; default: found from the
	// working directory.
	Repo string
	// NATSBin and CronlockBin are prebuilt binaries; empty: built into Dir.
	NATSBin, CronlockBin string
	// WaitBuild is how long to keep retrying `go build ./cmd/cronlock`
	// while it fails (the binary is being written); 0: try once.
	WaitBuild time.Duration
	// Recorder is the executable jobs run (with EnvRecord=1); it must call
	// MaybeRecord first. Default: this process's executable.
	Recorder string
	Log      io.Writer
	// Kinds, if not empty, are the only fault kinds injected (FaultKinds
	// names), to focus a run on some; Short then injects each once.
	Kinds []string
}

// Job sets of the harness: short jobs tick every second and take a few
// milliseconds; long jobs tick every second and run for several leases.
var (
	ShortJobs = []string{"tick.a", "tick.b", "tick.c"}
	LongJobs  = map[string]float64{"long.a": 2.5, "long.b": 3.5} // hold, in leases
)

// LockStream and HistoryStream are the streams of cronlock's default buckets.
const (
	LockBucket    = "locks"
	LockStream    = "KV_locks"
	HistoryStream = "KV_cronlock_history"
	// JobLockStream holds the jobs' locks: each job's lock is its state
	// record in the history bucket, so the leader a tick depends on is
	// this stream's (the lock stream serves the lock package's own users).
	JobLockStream = HistoryStream
	shutdownGrace = 2 * time.Second
	// ShortStartingDeadline is the short jobs' starting_deadline: after an
	// outage a replica runs the latest missed tick at once if it is at most
	// this old. Five ticks of an every-second job, so the latest missed
	// tick is still within it once the streams have leaders again.
	ShortStartingDeadline = 5 * time.Second
)

// Harness is a running set-up: NATS cluster, proxies, fence and replicas.
type Harness struct {
	cfg      Config
	rng      *rand.Rand
	log      io.Writer
	cluster  *Cluster
	fence    *Fence
	replicas []*Replica
	tr       *tracker
	probe    *prober

	mu      sync.Mutex
	faults  []Fault
	samples []Sample
	counts  map[string]int
}

func (h *Harness) logf(format string, args ...any) {
	fmt.Fprintf(h.log, "%s chaos: %s\n", time.Now().Format(tsFmt), fmt.Sprintf(format, args...))
}

// Result is what Run returns.
type Result struct {
	History *History
	Report  *Report
	Dir     string
}

// FindRepo returns the directory of go.mod above the working directory.
func FindRepo() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("chaos: go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("chaos: not inside a Go module")
	}
	return filepath.Dir(mod), nil
}

// Build builds nats-server and cronlock into dir, retrying the cronlock
// build for up to wait while it fails.
func Build(ctx context.Context, repo, dir string, wait time.Duration, log io.Writer) (natsBin, cronlockBin string, err error) {
	natsBin, cronlockBin = filepath.Join(dir, "nats-server"), filepath.Join(dir, "cronlock")
	build := func(out, pkg string) error {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
		cmd.Dir = repo
		b, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
		}
		return nil
	}
	if err := build(natsBin, "github.com/nats-io/nats-server/v2"); err != nil {
		return "", "", err
	}
	deadline := time.Now().Add(wait)
	for {
		err := build(cronlockBin, "./cmd/cronlock")
		if err == nil {
			return natsBin, cronlockBin, nil
		}
		if time.Now().After(deadline) {
			return "", "", err
		}
		fmt.Fprintf(log, "chaos: cronlock does not build yet, retrying in 30s: %v\n", firstLine(err.Error()))
		select {
		case <-ctx.Done():
			return "", "", ctx.Err()
		case <-time.After(30 * time.Second):
		}
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Run sets everything up, injects faults, shuts down cleanly, and checks
// the history.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := checkKinds(cfg.Kinds); err != nil {
		return nil, err
	}
	if cfg.Replicas == 0 {
		cfg.Replicas = 5
	}
	if cfg.Lease == 0 {
		cfg.Lease = 2 * time.Second
	}
	if cfg.Renew == 0 {
		cfg.Renew = 500 * time.Millisecond
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.Recorder == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		cfg.Recorder = exe
	}
	if cfg.Dir == "" {
		d, err := os.MkdirTemp("", "chaos-")
		if err != nil {
			return nil, err
		}
		cfg.Dir = d
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	if logf, err := os.Create(filepath.Join(cfg.Dir, "harness.log")); err == nil {
		defer logf.Close()
		cfg.Log = io.MultiWriter(cfg.Log, logf)
	}
	h := &Harness{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)), log: cfg.Log, tr: newTracker(), counts: map[string]int{}}
	h.logf("seed %d, dir %s", cfg.Seed, cfg.Dir)
	if cfg.NATSBin == "" || cfg.CronlockBin == "" {
		if cfg.Repo == "" {
			repo, err := FindRepo()
			if err != nil {
				return nil, err
			}
			cfg.Repo = repo
		}
		t0 := time.Now()
		n, c, err := Build(ctx, cfg.Repo, cfg.Dir, cfg.WaitBuild, cfg.Log)
		if err != nil {
			return nil, err
		}
		h.cfg.NATSBin, h.cfg.CronlockBin = n, c
		h.logf("built nats-server and cronlock in %v", time.Since(t0).Round(time.Millisecond))
	}
	defer h.teardown()
	if err := h.setup(ctx); err != nil {
		return nil, err
	}
	monCtx, stopMon := context.WithCancel(ctx)
	var monWG sync.WaitGroup
	monWG.Add(1)
	go func() { defer monWG.Done(); h.monitor(monCtx) }()
	monWG.Add(1)
	go func() { // notice job processes that vanish without an end line
		defer monWG.Done()
		for monCtx.Err() == nil {
			h.tr.inProgress()
			time.Sleep(50 * time.Millisecond)
		}
	}()

	// Warm up: every replica ready and the buckets created.
	time.Sleep(3 * time.Second)
	from := time.Now()
	h.inject(ctx)
	time.Sleep(2*cfg.Lease + 2*time.Second) // settle: the last fault's effects end
	to := time.Now().Add(-time.Second)
	shutdown := h.shutdown()
	stopMon()
	monWG.Wait()

	runs, err := ReadRecords(filepath.Join(cfg.Dir, "records"))
	if err != nil {
		return nil, err
	}
	var long []string
	for j := range LongJobs {
		long = append(long, j)
	}
	sort.Strings(long)
	h.mu.Lock()
	hist := &History{
		Runs: runs, Fence: h.fence.Log(), Faults: h.faults, Samples: h.samples,
		Lease: cfg.Lease, ShortJobs: ShortJobs, LongJobs: long,
		From: from, To: to, Shutdown: shutdown, VanishedRuns: h.tr.vanishedAt(),
		Probed: true, Policies: runControlPolicies(), Groups: map[string]int{Group: GroupMaxRunning},
	}
	h.mu.Unlock()
	if b, err := json.Marshal(hist); err == nil {
		os.WriteFile(filepath.Join(cfg.Dir, "history.json"), b, 0o644)
	}
	return &Result{History: hist, Report: Check(hist), Dir: cfg.Dir}, nil
}

// checkKinds reports a name of kinds that is not a fault kind.
func checkKinds(kinds []string) error {
	for _, k := range kinds {
		if !slices.Contains(FaultKinds, k) {
			return fmt.Errorf("chaos: unknown fault kind %q (kinds: %s)", k, strings.Join(FaultKinds, ", "))
		}
	}
	return nil
}

func (h *Harness) setup(ctx context.Context) error {
	var err error
	if h.fence, err = NewFence(); err != nil {
		return err
	}
	h.cluster, err = StartCluster(ctx, h.cfg.NATSBin, filepath.Join(h.cfg.Dir, "nats"), 3)
	if err != nil {
		return err
	}
	h.logf("NATS cluster up: %s", h.cluster.URL())
	if h.probe, err = newProber(h.cluster.URL()); err != nil {
		return err
	}
	recDir := filepath.Join(h.cfg.Dir, "records")
	if err := os.MkdirAll(recDir, 0o755); err != nil {
		return err
	}
	ports, err := FreePorts(h.cfg.Replicas)
	if err != nil {
		return err
	}
	for i := range h.cfg.Replicas {
		name := fmt.Sprintf("r%d", i+1)
		dir := filepath.Join(h.cfg.Dir, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		g, err := NewProxyGroup(h.cluster.Addrs())
		if err != nil {
			return err
		}
		r := &Replica{
			Name: name, Bin: h.cfg.CronlockBin, Net: g, HTTPPort: ports[i],
			ConfigFile: filepath.Join(dir, "cronlock.yaml"),
			LogFile:    filepath.Join(dir, "cronlock.log"),
			RecordFile: filepath.Join(recDir, name+".jsonl"),
		}
		if err := os.WriteFile(r.ConfigFile, []byte(h.replicaConfig(r)), 0o644); err != nil {
			return err
		}
		h.replicas = append(h.replicas, r)
		h.tr.add(r.RecordFile)
	}
	// Start one replica first so that the buckets are created once.
	for i, r := range h.replicas {
		if err := r.Start(); err != nil {
			return err
		}
		if i == 0 {
			if !r.WaitReady(30 * time.Second) {
				return fmt.Errorf("chaos: replica %s not ready within 30s (log %s)", r.Name, r.LogFile)
			}
		}
	}
	for _, r := range h.replicas {
		if !r.WaitReady(30 * time.Second) {
			return fmt.Errorf("chaos: replica %s not ready within 30s (log %s)", r.Name, r.LogFile)
		}
	}
	h.logf("%d replicas ready", len(h.replicas))
	return nil
}

func (h *Harness) replicaConfig(r *Replica) string {
	var b strings.Builder
	fmt.Fprintf(&b, `nats:
  url: %q
  name: cronlock-%s
lock:
  lease: %s
  renew: %s
  replicas: 3
  owner: %s
http:
  listen: "127.0.0.1:%d"
log:
  level: debug
shutdown_grace: %s
groups:
  %s:
    max_running: %d
jobs:
`, r.Net.URL(), r.Name, h.cfg.Lease, h.cfg.Renew, r.Name, r.HTTPPort, shutdownGrace, Group, GroupMaxRunning)
	var specs []jobSpec
	for _, j := range ShortJobs {
		specs = append(specs, jobSpec{name: j, every: time.Second, hold: 5 * time.Millisecond, startingDeadline: ShortStartingDeadline})
	}
	for _, j := range sortedKeys(LongJobs) {
		specs = append(specs, jobSpec{name: j, every: time.Second, hold: time.Duration(LongJobs[j] * float64(h.cfg.Lease))})
	}
	for _, s := range append(specs, runControlJobs()...) {
		writeJob(&b, s, h.cfg.Recorder, RecorderEnv(r.RecordFile, h.fence.URL(), r.Name, s.hold))
	}
	return b.String()
}

// sampleEvery is the monitor's period. It bounds how precisely the
// checker knows when the streams had leaders again (the catch-up figure,
// whose target is 1 s), so it is well below that.
const sampleEvery = 100 * time.Millisecond

// monitor samples the cluster every sampleEvery: nodes up and the leaders
// of the lock and history streams.
func (h *Harness) monitor(ctx context.Context) {
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	for {
		s := Sample{Time: time.Now()}
		for i := range h.cluster.Nodes {
			if h.cluster.Running(i) {
				s.NodesUp++
			}
		}
		var answers []bool
		probed := make(chan struct{})
		go func() { defer close(probed); answers = h.probe.answers(LockBucket, HistoryBucket) }()
		ls := h.cluster.StreamLeaders(LockStream, HistoryStream)
		<-probed
		s.LockAnswers, s.HistoryAnswers = answers[0], answers[1]
		if ls[0] >= 0 {
			s.LockLeader = h.cluster.Nodes[ls[0]].Name
		}
		if ls[1] >= 0 {
			s.HistoryLeader = h.cluster.Nodes[ls[1]].Name
		}
		h.mu.Lock()
		h.samples = append(h.samples, s)
		h.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (h *Harness) uniform(a, b time.Duration) time.Duration {
	return a + time.Duration(h.rng.Int64N(int64(b-a)+1))
}

func (h *Harness) record(f Fault) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f.Seq = len(h.faults) + 1
	h.faults = append(h.faults, f)
	h.counts[f.Kind]++
	h.logf("fault %d %s %s: %s → %s %s", f.Seq, f.Kind, f.Target, f.Start.Format(tsFmt), f.End.Format(tsFmt), f.Detail)
}

func (h *Harness) inject(ctx context.Context) {
	deadline := time.Now().Add(h.cfg.Duration)
	kinds := FaultKinds
	if len(h.cfg.Kinds) > 0 {
		kinds = h.cfg.Kinds
	}
	var plan []string
	if h.cfg.Short {
		plan = append(plan, kinds...)
		h.rng.Shuffle(len(plan), func(i, j int) { plan[i], plan[j] = plan[j], plan[i] })
	}
	weights := map[string]int{FKill: 3, FKillMidRun: 3, FPause: 2, FPauseTree: 2, FCut: 2, FBlackhole: 2, FDelay: 2, FNATSKill: 2, FNATSLeaderKill: 2, FNATSOutage: 1, FRolling: 1}
	total := 0
	for _, k := range kinds {
		total += weights[k]
	}
	for i := 0; ctx.Err() == nil; i++ {
		var kind string
		if h.cfg.Short {
			if i >= len(plan) {
				return
			}
			kind = plan[i]
		} else {
			if time.Now().After(deadline) {
				return
			}
			n := h.rng.IntN(total)
			for _, k := range kinds {
				if n < weights[k] {
					kind = k
					break
				}
				n -= weights[k]
			}
		}
		h.apply(ctx, kind)
		h.heal()
		gap := h.uniform(time.Second, 3*time.Second)
		if h.cfg.Short {
			gap = h.uniform(time.Second, 2*time.Second)
		}
		time.Sleep(gap)
	}
}

// heal makes sure every replica runs and both streams have a leader and
// answer requests before the next fault, so faults do not pile up. /jsz
// alone is not enough: right after every node restarted it reports the
// leaders recorded before the outage, seconds before an election.
func (h *Harness) heal() {
	for _, r := range h.replicas {
		if !r.Running() {
			h.logf("replica %s is down: restarting", r.Name)
			r.Start()
		}
	}
	t0 := time.Now()
	deadline := t0.Add(60 * time.Second)
	for time.Now().Before(deadline) && !h.streamsUp() {
		time.Sleep(100 * time.Millisecond)
	}
	if d := time.Since(t0); d > 2*time.Second {
		h.logf("waited %v for the lock and history streams to have a leader and answer", d.Round(time.Millisecond))
	}
}

// streamsUp reports whether the lock and history streams have a leader
// and answer the prober.
func (h *Harness) streamsUp() bool {
	if slices.Contains(h.cluster.StreamLeaders(LockStream, HistoryStream), -1) {
		return false
	}
	return !slices.Contains(h.probe.answers(LockBucket, HistoryBucket), false)
}

// target picks a replica: half of the time the one running a long job (if
// any), otherwise any.
func (h *Harness) target() *Replica {
	if h.rng.IntN(2) == 0 {
		if r := h.holder(true); r != nil {
			return r
		}
	}
	return h.replicas[h.rng.IntN(len(h.replicas))]
}

// holder returns a replica running a job (a long one if long), or nil.
func (h *Harness) holder(long bool) *Replica {
	var cands []Event
	for _, e := range h.tr.inProgress() {
		if _, isLong := LongJobs[e.Job]; isLong == long {
			cands = append(cands, e)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].PID < cands[j].PID })
	e := cands[h.rng.IntN(len(cands))]
	for _, r := range h.replicas {
		if r.Name == e.Replica && r.Running() {
			return r
		}
	}
	return nil
}

func (h *Harness) apply(ctx context.Context, kind string) {
	lease := h.cfg.Lease
	switch kind {
	case FKill, FKillMidRun:
		var r *Replica
		detail := ""
		if kind == FKillMidRun {
			deadline := time.Now().Add(3 * time.Second)
			for r == nil && time.Now().Before(deadline) {
				if r = h.holder(true); r == nil {
					r = h.holder(false)
				}
				if r == nil {
					time.Sleep(5 * time.Millisecond)
				}
			}
			if r == nil {
				h.logf("kill-mid-run: no run in progress within 3s; killing a random replica")
				r = h.replicas[h.rng.IntN(len(h.replicas))]
				detail = "no run in progress"
			} else {
				var jobs []string
				for _, e := range h.tr.inProgress() {
					if e.Replica == r.Name {
						jobs = append(jobs, fmt.Sprintf("%s/%d", e.Job, e.PID))
					}
				}
				sort.Strings(jobs)
				detail = "running " + strings.Join(jobs, ",")
			}
		} else {
			r = h.target()
		}
		start := time.Now()
		r.Kill()
		time.Sleep(h.uniform(time.Second, 4*time.Second))
		end := time.Now()
		r.Start()
		h.record(Fault{Kind: kind, Target: r.Name, Start: start, End: end, Detail: detail})
		r.WaitReady(20 * time.Second)
	case FPause, FPauseTree:
		r := h.target()
		start := time.Now()
		pids := r.Signal(syscall.SIGSTOP, kind == FPauseTree)
		time.Sleep(lease + h.uniform(500*time.Millisecond, 2500*time.Millisecond))
		r.Signal(syscall.SIGCONT, kind == FPauseTree)
		for _, p := range pids { // a child started meanwhile is not stopped, but one stopped must resume
			syscall.Kill(p, syscall.SIGCONT)
		}
		h.record(Fault{Kind: kind, Target: r.Name, Start: start, End: time.Now(), Detail: fmt.Sprintf("%d processes", len(pids))})
	case FCut, FBlackhole:
		r := h.target()
		mode := Cut
		if kind == FBlackhole {
			mode = Blackhole
		}
		start := time.Now()
		r.Net.SetMode(mode, 0)
		time.Sleep(h.uniform(lease*3/2, lease*3))
		r.Net.SetMode(Pass, 0)
		h.record(Fault{Kind: kind, Target: r.Name, Start: start, End: time.Now()})
	case FDelay:
		r := h.target()
		d := h.uniform(100*time.Millisecond, time.Second)
		start := time.Now()
		r.Net.SetMode(Delay, d)
		time.Sleep(h.uniform(3*time.Second, 8*time.Second))
		r.Net.SetMode(Pass, 0)
		h.record(Fault{Kind: kind, Target: r.Name, Start: start, End: time.Now(), Detail: "delay " + d.String()})
	case FNATSKill, FNATSLeaderKill:
		i := h.rng.IntN(len(h.cluster.Nodes))
		detail := ""
		if kind == FNATSLeaderKill {
			if l := h.cluster.StreamLeader(JobLockStream); l >= 0 {
				i = l
				detail = "leader of " + JobLockStream
			} else {
				detail = "no leader found; random node"
			}
		}
		sig := syscall.SIGKILL
		if h.rng.IntN(3) == 0 {
			sig = syscall.SIGTERM
		}
		start := time.Now()
		h.cluster.Stop(i, sig)
		time.Sleep(h.uniform(2*time.Second, 6*time.Second))
		end := time.Now()
		if err := h.cluster.Start(i); err != nil {
			h.logf("restart %s: %v", h.cluster.Nodes[i].Name, err)
		}
		h.record(Fault{Kind: kind, Target: h.cluster.Nodes[i].Name, Start: start, End: end, Detail: strings.TrimSpace(detail + " " + sig.String())})
		h.cluster.WaitReady(ctx, i)
	case FNATSOutage:
		sig := syscall.SIGKILL
		if h.rng.IntN(2) == 0 {
			sig = syscall.SIGTERM
		}
		start := time.Now()
		var wg sync.WaitGroup
		for i := range h.cluster.Nodes {
			wg.Add(1)
			go func() { defer wg.Done(); h.cluster.Stop(i, sig) }()
		}
		wg.Wait()
		time.Sleep(lease + h.uniform(time.Second, 4*time.Second))
		end := time.Now()
		for i := range h.cluster.Nodes {
			if err := h.cluster.Start(i); err != nil {
				h.logf("restart %s: %v", h.cluster.Nodes[i].Name, err)
			}
		}
		h.record(Fault{Kind: kind, Target: "all", Start: start, End: end, Detail: sig.String()})
		for i := range h.cluster.Nodes {
			h.cluster.WaitReady(ctx, i)
		}
	case FRolling:
		start := time.Now()
		var codes []string
		for _, r := range h.replicas {
			code := r.Terminate(shutdownGrace + 10*time.Second)
			codes = append(codes, fmt.Sprintf("%s=%d", r.Name, code))
			if code != 0 {
				r.addProblem(fmt.Sprintf("%s exited with code %d after SIGTERM in a rolling restart at %s", r.Name, code, time.Now().Format(tsFmt)))
			}
			r.Start()
			if !r.WaitReady(20 * time.Second) {
				h.logf("rolling restart: %s not ready within 20s", r.Name)
			}
		}
		h.record(Fault{Kind: kind, Target: "each", Start: start, End: time.Now(), Detail: "exit codes " + strings.Join(codes, " ")})
	}
}

// shutdown stops every replica with SIGTERM at once, then inspects what is
// left: exit codes, held locks, live job processes.
func (h *Harness) shutdown() *ShutdownState {
	s := &ShutdownState{ExitCodes: map[string]int{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, r := range h.replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code := r.Terminate(shutdownGrace + 15*time.Second)
			mu.Lock()
			s.ExitCodes[r.Name] = code
			mu.Unlock()
		}()
	}
	wg.Wait()
	h.logf("replicas stopped: %v", s.ExitCodes)
	for _, r := range h.replicas {
		s.Unexpected = append(s.Unexpected, r.Problems()...)
	}
	s.LocksHeld = LocksHeld(h.cluster.URL())
	if out, err := exec.Command(h.cfg.CronlockBin, "locks", "--json", "-c", h.replicas[0].ConfigFile).CombinedOutput(); err == nil {
		h.logf("cronlock locks --json: %s", strings.TrimSpace(string(out)))
	} else {
		h.logf("cronlock locks --json: %v: %s", err, strings.TrimSpace(string(out)))
	}
	runs, _ := ReadRecords(filepath.Join(h.cfg.Dir, "records"))
	for _, run := range runs {
		if JobProcessAlive(run.PID, h.cfg.Recorder) {
			s.LivePIDs = append(s.LivePIDs, run.PID)
		}
	}
	s.LiveProcs = ProcsOf(h.cfg.CronlockBin, h.cfg.Recorder)
	return s
}

func (h *Harness) teardown() {
	for _, r := range h.replicas {
		if r.Running() {
			r.Kill()
		}
		r.Net.Close()
	}
	if h.probe != nil {
		h.probe.close()
	}
	if h.cluster != nil {
		h.cluster.Shutdown()
	}
	if h.fence != nil {
		h.fence.Close()
	}
}
