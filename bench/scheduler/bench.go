package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cronlock/cronlock/lock"
	"github.com/cronlock/cronlock/scheduler"
)

// startupTimeout bounds how long replicas may take to connect and register
// their jobs; lead is the pause between the last READY and the common start.
const (
	startupTimeout = 60 * time.Second
	lead           = 1 * time.Second
)

// startOffset is where in its second the run starts: the ticks fall half
// a second after the start and before the end, so the writes of the
// run's first and last ticks land inside the measured phase (with a start
// just after a tick, the last tick's writes came after the end and the
// stored writes per job-tick read low by up to one tick's share).
const startOffset = 500 * time.Millisecond

// startPhase is the first instant at or after t that is startOffset into
// a second.
func startPhase(t time.Time) time.Time {
	s := t.Truncate(time.Second).Add(startOffset)
	if s.Before(t) {
		s = s.Add(time.Second)
	}
	return s
}

// serverSnap is what the parent samples of the nats-server.
type serverSnap struct {
	ru                usage
	inMsgs, outMsgs   int64
	inBytes, outBytes int64
	apiTotal, apiErrs uint64
	lockSeq, histSeq  uint64 // last sequence of the lock and history streams
	slowConsumers     int64
	ownIn, ownOut     int64             // the bench's own connections' messages (lock trace, tap, these snapshots)
	streams           map[string]uint64 // every stream's last sequence
	rssKiB            int64             // the parent's VmRSS
	goroutines        int               // the parent's, server's included
}

type replicaProc struct {
	name    string
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	lines   chan string    // stdout lines
	reads   sync.WaitGroup // stdout and stderr readers, done at EOF
	report  *replicaReport
	err     error
	spawned time.Time
	ready   time.Duration // spawn → READY: connected, jobs added
}

// bench runs one configuration end to end.
func bench(ctx context.Context, c config) (*result, error) {
	if c.Replicas < 1 || c.Jobs < 1 || c.Duration <= 0 {
		return nil, errors.New("need -replicas ≥ 1, -jobs ≥ 1, -duration > 0")
	}
	logf := func(format string, a ...any) {
		fmt.Fprintf(c.stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, a...)...)
	}

	dir, err := os.MkdirTemp("", "cronlock-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	ns, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: server.RANDOM_PORT,
		JetStream: true, StoreDir: dir,
		NoLog: true, NoSigs: true,
	})
	if err != nil {
		return nil, err
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		return nil, errors.New("nats-server not ready")
	}
	defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
	url := ns.ClientURL()

	// The parent's own connection: stream sequences, lock trace.
	nc, err := nats.Connect(url, nats.Name("cronlock-bench-parent"))
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	var tp *tap
	if c.Tap {
		if tp, err = startTap(url); err != nil {
			return nil, err
		}
		defer tp.close()
	}

	own := []*nats.Conn{nc} // the bench's own connections: not the replicas' traffic
	if tp != nil {
		own = append(own, tp.nc)
	}

	logf("jobs=%d replicas=%d duration=%v work=%v: starting replicas (server %s)", c.Jobs, c.Replicas, c.Duration, c.Work, url)
	procs := make([]*replicaProc, c.Replicas)
	defer func() { // never leave a replica behind
		for _, p := range procs {
			if p != nil && p.cmd.ProcessState == nil {
				p.cmd.Process.Kill()
				p.wait()
			}
		}
	}()
	for i := range procs {
		rc := replicaConfig{Name: fmt.Sprintf("r%d", i+1), URL: url, Jobs: c.Jobs, Schedule: c.Schedule, Work: c.Work,
			Idle: c.Idle, IdleFrom: c.Settle, IdleTo: c.Settle + c.Window}
		if c.CPUProfile != "" {
			rc.CPUProfile = c.CPUProfile + "." + rc.Name
		}
		if c.MemProfile != "" {
			rc.MemProfile = c.MemProfile + "." + rc.Name
		}
		p, err := spawn(c, rc)
		if err != nil {
			return nil, err
		}
		procs[i] = p
	}
	readyBy := time.After(startupTimeout)
	for _, p := range procs {
		if err := p.expect(readyLine, readyBy); err != nil {
			return nil, fmt.Errorf("replica %s: %w", p.name, err)
		}
	}
	added := map[string]float64{}
	for _, p := range procs {
		added[p.name] = p.ready.Seconds()
	}

	var tr *lockTracer
	if n := min(c.Trace, c.Jobs); n > 0 {
		if tr, err = startTracer(ctx, js, n); err != nil {
			return nil, fmt.Errorf("lock trace: %w", err)
		}
	}

	start := startPhase(time.Now().Add(lead))
	end := start.Add(c.Duration)
	from, to := start, end // the measured phase
	if c.Idle {
		from = start.Add(c.Settle)
		to = from.Add(c.Window)
	}
	for _, p := range procs {
		fmt.Fprintf(p.stdin, "%s %d %d\n", goWord, start.UnixNano(), end.UnixNano())
	}
	logf("replicas ready; run from %s to %s", start.Format("15:04:05.000"), end.Format("15:04:05.000"))

	time.Sleep(time.Until(start))
	sr := snapshot(ctx, ns, js, own) // at Run
	time.Sleep(time.Until(from))
	var stopProf func()
	if c.ServerProf != "" {
		f, err := os.Create(c.ServerProf)
		if err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, err
		}
		stopProf = func() { pprof.StopCPUProfile(); f.Close() }
	}
	s0 := snapshot(ctx, ns, js, own)
	var phases *phaseSampler
	if c.Phases {
		phases = startPhaseSampler()
	}
	if tp != nil {
		tp.reset()
	}
	time.Sleep(time.Until(to))
	s1 := snapshot(ctx, ns, js, own)
	var phaseBusy *[10]float64
	if phases != nil {
		b := phases.result()
		phaseBusy = &b
	}
	var taps map[string]int64
	if tp != nil {
		taps = tp.snapshot()
	}
	if stopProf != nil {
		stopProf()
	}
	time.Sleep(time.Until(end))
	logf("run over; waiting for the replicas to shut down and report")

	// Replicas shut down (ShutdownGrace is 30 s by default) and report.
	reportBy := time.After(scheduler.DefaultShutdownGrace + 30*time.Second)
	var errs []error
	for _, p := range procs {
		p.collect(reportBy)
		if p.err != nil {
			errs = append(errs, fmt.Errorf("replica %s: %w", p.name, p.err))
		}
	}
	s2 := snapshot(ctx, ns, js, own) // after shutdown: releases included
	for _, p := range procs {
		p.wait()
		if code := p.cmd.ProcessState.ExitCode(); code != 0 && p.err == nil {
			errs = append(errs, fmt.Errorf("replica %s: exit code %d", p.name, code))
		}
	}

	var reps []*replicaReport
	for _, p := range procs {
		if p.report != nil {
			reps = append(reps, p.report)
		}
	}
	res := merge(c, start, end, reps, s0, s1, s2)
	if c.Idle {
		res.Idle = mergeIdle(reps, added, sr, s0, s1, c.Settle, to.Sub(from))
	}
	res.MachineBusyByPhase = phaseBusy
	res.Tap = tapPerJobTick(taps, res.JobTicks)
	if tr != nil {
		res.Trace = analyzeTrace(tr.stop(), reps, res.WindowFrom, res.WindowTo, min(c.Trace, c.Jobs))
	}
	return res, errors.Join(errs...)
}

func spawn(c config, rc replicaConfig) (*replicaProc, error) {
	env, _ := json.Marshal(rc)
	cmd := exec.Command(c.exe)
	cmd.Env = append(os.Environ(), replicaEnv+"="+string(env))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &replicaProc{name: rc.Name, cmd: cmd, stdin: stdin, lines: make(chan string, 64), spawned: time.Now()}
	p.reads.Add(2)
	go func() {
		defer p.reads.Done()
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<30) // the report is one long line
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	go func() {
		defer p.reads.Done()
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			fmt.Fprintf(c.stderr, "[%s] %s\n", rc.Name, sc.Text())
		}
	}()
	return p, nil
}

// wait reaps the process once its output is read to the end (Wait closes
// the pipes, so it must come after the readers are done).
func (p *replicaProc) wait() {
	p.stdin.Close()
	done := make(chan struct{})
	go func() { p.reads.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-done
	}
	p.cmd.Wait()
}

// expect waits for a given stdout line.
func (p *replicaProc) expect(want string, by <-chan time.Time) error {
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				return errors.New("exited before " + want)
			}
			if strings.TrimSpace(l) == want {
				p.ready = time.Since(p.spawned)
				return nil
			}
		case <-by:
			return errors.New("timed out waiting for " + want)
		}
	}
}

// collect waits for the JSON report line.
func (p *replicaProc) collect(by <-chan time.Time) {
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				p.err = errors.New("exited without a report")
				return
			}
			if !strings.HasPrefix(l, "{") {
				continue
			}
			var r replicaReport
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				p.err = fmt.Errorf("bad report: %w", err)
				return
			}
			p.report = &r
			if r.Error != "" {
				p.err = errors.New(r.Error)
			}
			return
		case <-by:
			p.err = errors.New("no report in time")
			p.cmd.Process.Kill()
			return
		}
	}
}

func snapshot(ctx context.Context, ns *server.Server, js jetstream.JetStream, own []*nats.Conn) serverSnap {
	s := serverSnap{ru: rusage()}
	if v, err := ns.Varz(nil); err == nil {
		s.inMsgs, s.outMsgs, s.inBytes, s.outBytes = v.InMsgs, v.OutMsgs, v.InBytes, v.OutBytes
		s.slowConsumers = v.SlowConsumers
	}
	for _, c := range own {
		st := c.Stats()
		s.ownIn += int64(st.InMsgs)
		s.ownOut += int64(st.OutMsgs)
	}
	if j, err := ns.Jsz(nil); err == nil {
		s.apiTotal, s.apiErrs = j.API.Total, j.API.Errors
	}
	seq := func(stream string) uint64 {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		st, err := js.Stream(ctx, stream)
		if err != nil {
			return 0
		}
		return st.CachedInfo().State.LastSeq
	}
	s.lockSeq = seq("KV_" + lock.DefaultBucket)
	s.histSeq = seq("KV_" + scheduler.DefaultHistoryBucket)
	s.streams = streamSeqs(ctx, js)
	s.rssKiB, s.goroutines = vmRSSKiB(), runtime.NumGoroutine()
	return s
}
