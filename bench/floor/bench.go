package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cronlock/cronlock/bench/internal/childproc"
	"github.com/cronlock/cronlock/bench/internal/procstat"
	"github.com/cronlock/cronlock/internal/kv"
)

// startupTimeout bounds how long clients may take to connect and catch up
// with the bucket; lead is the least pause between the last READY and the
// first tick (the window's start, a whole second).
const (
	startupTimeout = 60 * time.Second
	lead           = 300 * time.Millisecond
)

// reportGrace is how long after the window's end the clients may take to
// report (a write that got no answer times out after 5 s).
const reportGrace = 30 * time.Second

// serverSnap is what the parent samples of the nats-server.
type serverSnap struct {
	ru                procstat.Usage
	inMsgs, outMsgs   int64
	inBytes, outBytes int64
	slowConsumers     int64
	ownIn, ownOut     int64  // the parent's own connection's messages (these snapshots)
	lastSeq           uint64 // the bucket stream's last sequence
}

type clientProc struct {
	*childproc.Proc[clientReport]
	index int
}

// bench runs one configuration end to end.
func bench(ctx context.Context, c config) (*result, error) {
	if c.Clients < 1 || c.Jobs < 1 || c.Duration < time.Second || c.Value < 0 {
		return nil, errors.New("need -clients ≥ 1, -jobs ≥ 1, -duration ≥ 1s, -value ≥ 0")
	}
	ns, stop, err := startServer()
	if err != nil {
		return nil, err
	}
	defer stop()
	url := ns.ClientURL()
	// The parent's own connection: creates the bucket, writes every key
	// once (records exist, as cronlock's do), reads the stream's state.
	nc, stream, err := prepareBucket(ctx, url, c)
	if err != nil {
		return nil, err
	}
	defer nc.Close()

	c.logf("clients=%d jobs=%d duration=%v value=%d B: starting clients (server %s)", c.Clients, c.Jobs, c.Duration, c.Value, url)
	procs := make([]*clientProc, c.Clients)
	defer func() { // never leave a client behind
		for _, p := range procs {
			if p != nil {
				p.Stop()
			}
		}
	}()
	if err := startClients(c, url, procs); err != nil {
		return nil, err
	}
	w, err := measure(c, procs, func() serverSnap { return snapshot(ctx, ns, stream, nc) })
	if err != nil {
		return nil, err
	}
	reps, err := gather(procs)
	return merge(c, w.start, w.end, reps, w.s0, w.s1), err
}

func (c config) logf(format string, a ...any) {
	fmt.Fprintf(c.stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, a...)...)
}

// startServer starts the embedded nats-server (JetStream, file store in a
// temp dir); stop shuts it down and removes the dir.
func startServer() (*server.Server, func(), error) {
	dir, err := os.MkdirTemp("", "cronlock-floor-")
	if err != nil {
		return nil, nil, err
	}
	ns, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: server.RANDOM_PORT,
		JetStream: true, StoreDir: dir,
		NoLog: true, NoSigs: true,
	})
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	go ns.Start()
	stop := func() { ns.Shutdown(); ns.WaitForShutdown(); os.RemoveAll(dir) }
	if !ns.ReadyForConnections(10 * time.Second) {
		stop()
		return nil, nil, errors.New("nats-server not ready")
	}
	return ns, stop, nil
}

// prepareBucket creates the bucket and writes every key once; it returns
// the parent's connection and the bucket's stream.
func prepareBucket(ctx context.Context, url string, c config) (*nats.Conn, jetstream.Stream, error) {
	nc, err := nats.Connect(url, nats.Name("cronlock-floor-parent"))
	if err != nil {
		return nil, nil, err
	}
	fail := func(err error) (*nats.Conn, jetstream.Stream, error) { nc.Close(); return nil, nil, err }
	js, err := jetstream.New(nc)
	if err != nil {
		return fail(err)
	}
	b, err := kv.Open(ctx, js, kv.Config{Name: bucketName})
	if err != nil {
		return fail(err)
	}
	value := makeValue(c.Value)
	for i := range c.Jobs {
		if _, err := b.Put(ctx, kv.Write{Key: keyName(i), Value: value, Header: nats.Header{tokenHeader: {"0"}}}); err != nil {
			return fail(fmt.Errorf("first write of %s: %w", keyName(i), err))
		}
	}
	stream, err := js.Stream(ctx, "KV_"+bucketName)
	if err != nil {
		return fail(err)
	}
	return nc, stream, nil
}

// startClients spawns the clients into procs and waits for each to be
// ready.
func startClients(c config, url string, procs []*clientProc) error {
	for i := range procs {
		cc := clientConfig{Index: i, Clients: c.Clients, URL: url, Jobs: c.Jobs, Value: c.Value, Batch: c.Batch}
		if c.CPUProfile != "" {
			cc.CPUProfile = fmt.Sprintf("%s.%d", c.CPUProfile, i)
		}
		p, err := spawn(c, cc)
		if err != nil {
			return err
		}
		procs[i] = p
	}
	readyBy := time.After(startupTimeout)
	for _, p := range procs {
		if err := p.AwaitReady(readyBy); err != nil {
			return fmt.Errorf("client %d: %w", p.index, err)
		}
	}
	return nil
}

// window is the measured window and the server's state at its edges.
type window struct {
	start, end time.Time
	s0, s1     serverSnap
}

// measure starts the clients' common window and snapshots the server at
// its edges, profiling the parent over it when asked.
func measure(c config, procs []*clientProc, snap func() serverSnap) (window, error) {
	start := time.Now().Add(lead).Truncate(time.Second).Add(time.Second)
	w := window{start: start, end: start.Add(c.Duration)}
	for _, p := range procs {
		p.Begin(w.start, w.end)
	}
	c.logf("clients ready; window %s to %s", w.start.Format("15:04:05.000"), w.end.Format("15:04:05.000"))

	time.Sleep(time.Until(w.start.Add(-guard)))
	if c.ServerProf != "" {
		f, err := os.Create(c.ServerProf)
		if err != nil {
			return w, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return w, err
		}
		defer pprof.StopCPUProfile()
	}
	w.s0 = snap()
	time.Sleep(time.Until(w.end))
	w.s1 = snap()
	return w, nil
}

// gather collects the clients' reports and waits for them to exit.
func gather(procs []*clientProc) ([]*clientReport, error) {
	reportBy := time.After(reportGrace)
	var errs []error
	for _, p := range procs {
		p.Collect(reportBy, func(r *clientReport) string { return r.Error })
		if p.Err != nil {
			errs = append(errs, fmt.Errorf("client %d: %w", p.index, p.Err))
		}
	}
	for _, p := range procs {
		p.Wait()
		if code := p.Cmd.ProcessState.ExitCode(); code != 0 && p.Err == nil {
			errs = append(errs, fmt.Errorf("client %d: exit code %d", p.index, code))
		}
	}
	var reps []*clientReport
	for _, p := range procs {
		if p.Report != nil {
			reps = append(reps, p.Report)
		}
	}
	return reps, errors.Join(errs...)
}

func spawn(c config, cc clientConfig) (*clientProc, error) {
	env, _ := json.Marshal(cc)
	p, err := childproc.Start[clientReport](c.exe, []string{clientEnv + "=" + string(env)}, fmt.Sprintf("c%d", cc.Index), c.stderr)
	if err != nil {
		return nil, err
	}
	return &clientProc{Proc: p, index: cc.Index}, nil
}

// snapshot samples the server: the parent's CPU, Varz, the parent's own
// connection's messages (read before the stream info request, whose
// messages thus fall in the next interval, as in every interval), and
// the bucket stream's last sequence.
func snapshot(ctx context.Context, ns *server.Server, stream jetstream.Stream, own *nats.Conn) serverSnap {
	s := serverSnap{ru: procstat.Rusage()}
	if v, err := ns.Varz(nil); err == nil {
		s.inMsgs, s.outMsgs, s.inBytes, s.outBytes = v.InMsgs, v.OutMsgs, v.InBytes, v.OutBytes
		s.slowConsumers = v.SlowConsumers
	}
	st := own.Stats()
	s.ownIn, s.ownOut = int64(st.InMsgs), int64(st.OutMsgs)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if info, err := stream.Info(ctx); err == nil {
		s.lastSeq = info.State.LastSeq
	}
	return s
}
