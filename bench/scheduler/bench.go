package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cronlock/cronlock/bench/internal/childproc"
	"github.com/cronlock/cronlock/bench/internal/procstat"
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
	ru                procstat.Usage
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
	*childproc.Proc[replicaReport]
	name  string
	ready time.Duration // spawn → READY: connected, jobs added
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
	groups := replicaGroups(c)
	procs := make([]*replicaProc, len(groups))
	defer func() { // never leave a replica behind
		for _, p := range procs {
			if p != nil {
				p.Stop()
			}
		}
	}()
	for i, names := range groups {
		rc := replicaConfig{Name: names[0], URL: url, Jobs: c.Jobs, Schedule: c.Schedule, Work: c.Work,
			Idle: c.Idle, IdleFrom: c.Settle, IdleTo: c.Settle + c.Window}
		if len(names) > 1 {
			rc.Name, rc.Members = names[0]+"–"+names[len(names)-1], names
		}
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
		if err := p.expect(readyBy); err != nil {
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
		p.Begin(start, end)
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
		p.Collect(reportBy, func(r *replicaReport) string { return r.Error })
		if p.Err != nil {
			errs = append(errs, fmt.Errorf("replica %s: %w", p.name, p.Err))
		}
	}
	s2 := snapshot(ctx, ns, js, own) // after shutdown: releases included
	for _, p := range procs {
		p.Wait()
		if code := p.Cmd.ProcessState.ExitCode(); code != 0 && p.Err == nil {
			errs = append(errs, fmt.Errorf("replica %s: exit code %d", p.name, code))
		}
	}

	var reps []*replicaReport
	for _, p := range procs {
		if p.Report != nil {
			reps = append(reps, p.Report)
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

// replicaGroups are the replicas' names (r1, r2, …) by process: one a
// process, or all in one with -colocate.
func replicaGroups(c config) [][]string {
	var names []string
	for i := range c.Replicas {
		names = append(names, fmt.Sprintf("r%d", i+1))
	}
	if c.Colocate {
		return [][]string{names}
	}
	groups := make([][]string, len(names))
	for i, n := range names {
		groups[i] = []string{n}
	}
	return groups
}

func spawn(c config, rc replicaConfig) (*replicaProc, error) {
	env, _ := json.Marshal(rc)
	p, err := childproc.Start[replicaReport](c.exe, []string{replicaEnv + "=" + string(env)}, rc.Name, c.stderr)
	if err != nil {
		return nil, err
	}
	return &replicaProc{Proc: p, name: rc.Name}, nil
}

// expect waits for the replica's ready line, noting when it came (ready).
func (p *replicaProc) expect(by <-chan time.Time) error {
	if err := p.AwaitReady(by); err != nil {
		return err
	}
	p.ready = time.Since(p.Spawned)
	return nil
}

func snapshot(ctx context.Context, ns *server.Server, js jetstream.JetStream, own []*nats.Conn) serverSnap {
	s := serverSnap{ru: procstat.Rusage()}
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
