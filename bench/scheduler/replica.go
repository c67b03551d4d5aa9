package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/bench/internal/childproc"
	"github.com/cronlock/cronlock/bench/internal/procstat"
)

// replicaEnv carries a replica's configuration (JSON) from the parent to the
// re-executed child. Its presence is what makes the process a replica; it is
// not a flag so that -h shows only what a user sets.
const replicaEnv = "CRONLOCK_BENCH_REPLICA"

// replicaConfig is what the parent tells a replica.
type replicaConfig struct {
	Name     string        `json:"name"`
	URL      string        `json:"url"`
	Jobs     int           `json:"jobs"`
	Schedule string        `json:"schedule"`
	Work     time.Duration `json:"work"`
	// Members are the owner IDs of the replicas this process runs, each
	// with its own connection, lock client and scheduler (-colocate); empty
	// is one replica named Name.
	Members    []string `json:"members,omitempty"`
	CPUProfile string   `json:"cpuprofile,omitempty"`
	MemProfile string   `json:"memprofile,omitempty"`
	// Idle mode: daily jobs (dailySchedule), sampled at start+IdleFrom and
	// start+IdleTo.
	Idle     bool          `json:"idle,omitempty"`
	IdleFrom time.Duration `json:"idle_from,omitempty"`
	IdleTo   time.Duration `json:"idle_to,omitempty"`
}

// The replica prints childproc.ReadyLine once its jobs are registered,
// runs its scheduler over the window the parent answers with
// (childproc.Handshake), shuts it down, and prints one JSON line
// (replicaReport) on stdout.

// replicaReport is the one JSON line a replica prints at the end.
type replicaReport struct {
	Name  string `json:"name"`
	Owner string `json:"owner"`
	// Members is how many replicas ran in this process (-colocate): its
	// CPU, memory and goroutines are theirs together, its NATS traffic and
	// metrics their sum.
	Members int `json:"members"`
	PID     int `json:"pid"`
	// Runs[i] are job i's runs on this replica: [tick (Unix seconds),
	// start − tick (µs)].
	Runs [][][2]int64 `json:"runs"`

	WallSeconds     float64 `json:"wall_s"`     // GO start → Run returned
	UserSeconds     float64 `json:"cpu_user_s"` // over WallSeconds
	SysSeconds      float64 `json:"cpu_sys_s"`
	ShutdownSeconds float64 `json:"shutdown_s"` // cancel → Run returned
	MaxRSSKiB       int64   `json:"max_rss_kib"`
	HeapInuse       uint64  `json:"heap_inuse_bytes"`      // at the end
	HeapInusePeak   uint64  `json:"heap_inuse_peak_bytes"` // sampled every second
	GoroutinesPeak  int     `json:"goroutines_peak"`
	GCCycles        uint32  `json:"gc_cycles"`

	NATS procstat.NATS `json:"nats"` // nc.Stats() delta over the run

	Skipped   map[string]float64 `json:"skipped"`    // cronlock_ticks_skipped_total by reason
	Missed    float64            `json:"missed"`     // cronlock_ticks_missed_total
	RunStatus map[string]float64 `json:"run_status"` // cronlock_runs_total by status
	Acquire   map[string]float64 `json:"acquire"`    // cronlock_lock_acquire_seconds count by result
	// AcquireSeconds is the sum of cronlock_lock_acquire_seconds by result.
	AcquireSeconds map[string]float64 `json:"acquire_s"`
	// Warnings counts the log lines at warn level or above by message
	// (scheduler and lock), e.g. "tick skipped: cannot acquire the lock".
	Warnings map[string]int `json:"warnings"`
	// RSSEndKiB is the resident set (VmRSS) just before the shutdown.
	RSSEndKiB int64       `json:"rss_end_kib"`
	Idle      *idleSample `json:"idle,omitempty"`
	Error     string      `json:"error,omitempty"`
}

// warnCounter is a zerolog hook counting warnings by message.
type warnCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (w *warnCounter) Run(_ *zerolog.Event, level zerolog.Level, msg string) {
	if level < zerolog.WarnLevel {
		return
	}
	w.mu.Lock()
	w.n[msg]++
	w.mu.Unlock()
}

// replicaMain is the child process: it never returns normally.
func replicaMain() {
	var cfg replicaConfig
	if err := json.Unmarshal([]byte(os.Getenv(replicaEnv)), &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "replica: bad %s: %v\n", replicaEnv, err)
		os.Exit(2)
	}
	rep, err := runReplica(cfg, os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "replica %s: %v\n", cfg.Name, err)
		if rep == nil {
			os.Exit(1)
		}
		rep.Error = err.Error()
	}
	out, _ := json.Marshal(rep)
	os.Stdout.Write(append(out, '\n'))
	if err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

type runRec struct {
	mu   sync.Mutex
	runs [][2]int64
}

func runReplica(cfg replicaConfig, stdin io.Reader, stdout io.Writer) (*replicaReport, error) {
	ctx := context.Background()
	warns := &warnCounter{n: map[string]int{}}
	logger := zerolog.New(io.Discard).Level(zerolog.WarnLevel).Hook(warns)

	names := cfg.Members
	if len(names) == 0 {
		names = []string{cfg.Name}
	}
	var ms members
	defer func() { ms.close() }()
	recs := make([]*runRec, cfg.Jobs)
	for i := range recs {
		recs[i] = &runRec{}
	}
	for _, name := range names {
		m, err := startMember(ctx, name, cfg.URL, logger)
		if err != nil {
			return nil, err
		}
		ms = append(ms, m)
		if err := m.addJobs(cfg, recs); err != nil {
			return nil, err
		}
	}

	// Handshake: ready, then wait for the common start and end.
	start, end, err := childproc.Handshake(bufio.NewReader(stdin), stdout)
	if err != nil {
		return nil, err
	}
	time.Sleep(time.Until(start))

	if cfg.CPUProfile != "" {
		pf, err := os.Create(cfg.CPUProfile)
		if err != nil {
			return nil, err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return nil, err
		}
	}
	ru0 := procstat.Rusage()
	st0 := ms.stats()
	t0 := time.Now()

	runCtx, cancel := context.WithCancel(ctx)
	done := ms.run(runCtx)

	var heapPeak uint64
	gPeak := 0
	sample := func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		heapPeak = max(heapPeak, ms.HeapInuse)
		gPeak = max(gPeak, runtime.NumGoroutine())
	}
	var idle *idleWatch
	if cfg.Idle {
		idle = watchIdle(ms[0].nc, ru0, st0, start.Add(cfg.IdleFrom), start.Add(cfg.IdleTo))
	}
	tick := time.NewTicker(time.Second)
	stopAt := time.NewTimer(time.Until(end))
sampling:
	for {
		select {
		case <-tick.C:
			sample()
		case <-stopAt.C:
			break sampling
		}
	}
	tick.Stop()
	sample()
	rssEnd := vmRSSKiB()
	if cfg.MemProfile != "" {
		if err := writeHeapProfile(cfg.MemProfile); err != nil {
			fmt.Fprintf(os.Stderr, "replica %s: heap profile: %v\n", cfg.Name, err)
		}
	}
	cancel()
	tc := time.Now()
	runErr := <-done
	tEnd := time.Now()
	ru1 := procstat.Rusage()
	st1 := ms.stats()
	if cfg.CPUProfile != "" {
		pprof.StopCPUProfile()
	}

	var mst runtime.MemStats
	runtime.ReadMemStats(&mst)
	rep := &replicaReport{
		Name: cfg.Name, Owner: strings.Join(names, ","), Members: len(names), PID: os.Getpid(),
		WallSeconds:     tEnd.Sub(t0).Seconds(),
		UserSeconds:     ru1.User - ru0.User,
		SysSeconds:      ru1.Sys - ru0.Sys,
		ShutdownSeconds: tEnd.Sub(tc).Seconds(),
		MaxRSSKiB:       ru1.MaxRSSKiB,
		HeapInuse:       mst.HeapInuse,
		HeapInusePeak:   heapPeak,
		GoroutinesPeak:  gPeak,
		GCCycles:        mst.NumGC,
		NATS:            procstat.NATSDelta(st0, st1),
		Skipped:         map[string]float64{},
		RunStatus:       map[string]float64{},
		Acquire:         map[string]float64{},
		AcquireSeconds:  map[string]float64{},
		RSSEndKiB:       rssEnd,
	}
	if idle != nil {
		rep.Idle = idle.result()
	}
	rep.Runs = make([][][2]int64, cfg.Jobs)
	for i, r := range recs {
		r.mu.Lock()
		rep.Runs[i] = r.runs
		r.mu.Unlock()
	}
	if err := ms.gather(rep); err != nil {
		return rep, err
	}
	warns.mu.Lock()
	rep.Warnings = warns.n
	warns.mu.Unlock()
	return rep, runErr
}

// writeHeapProfile writes the heap profile (in use at the last GC) to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC() // the profile shows what is live now
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func jobName(i int) string { return fmt.Sprintf("bench.job-%04d", i) }

// gather sums the scheduler's metrics over jobs.
func gather(reg *prometheus.Registry, rep *replicaReport) error {
	mfs, err := reg.Gather()
	if err != nil {
		return err
	}
	label := func(m *dto.Metric, name string) string {
		for _, l := range m.GetLabel() {
			if l.GetName() == name {
				return l.GetValue()
			}
		}
		return ""
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch mf.GetName() {
			case "cronlock_ticks_skipped_total":
				rep.Skipped[label(m, "reason")] += m.GetCounter().GetValue()
			case "cronlock_ticks_missed_total":
				rep.Missed += m.GetCounter().GetValue()
			case "cronlock_runs_total":
				rep.RunStatus[label(m, "status")] += m.GetCounter().GetValue()
			case "cronlock_lock_acquire_seconds":
				r := label(m, "result")
				rep.Acquire[r] += float64(m.GetHistogram().GetSampleCount())
				rep.AcquireSeconds[r] += m.GetHistogram().GetSampleSum()
			}
		}
	}
	return nil
}
