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
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/cronlock/cronlock/bench/internal/childproc"
	"github.com/cronlock/cronlock/bench/internal/procstat"
	"github.com/cronlock/cronlock/internal/kv"
)

// clientEnv carries a client's configuration (JSON) from the parent to the
// re-executed child. Its presence is what makes the process a client; it is
// not a flag so that -h shows only what a user sets.
const clientEnv = "CRONLOCK_BENCH_FLOOR_CLIENT"

// bucketName is the KV bucket every client writes and follows.
const bucketName = "floor"

// guard is how long before the first tick the window opens: every process
// takes its first sample while nothing is written yet.
const guard = 20 * time.Millisecond

// clientConfig is what the parent tells a client.
type clientConfig struct {
	Index      int    `json:"index"`
	Clients    int    `json:"clients"`
	URL        string `json:"url"`
	Jobs       int    `json:"jobs"`
	Value      int    `json:"value"`
	Batch      bool   `json:"batch,omitempty"`
	CPUProfile string `json:"cpuprofile,omitempty"`
}

// The client prints childproc.ReadyLine once its follow has caught up; the
// window the parent answers with (childproc.Handshake) is ticked at every
// whole second in [start, end); it prints one JSON line (clientReport)
// once the last tick's writes are acked, and exits when its stdin closes
// (so that its shutdown is not in the parent's window).

// clientReport is the one JSON line a client prints at the end.
type clientReport struct {
	Index int `json:"index"`
	PID   int `json:"pid"`
	// JobTicks is the job-ticks dealt to this client whose claim and
	// result were both stored; DoneBySecond[i] those of the window's i-th
	// second.
	JobTicks     int    `json:"job_ticks"`
	DoneBySecond []int  `json:"done_by_second"`
	Claims       int    `json:"claims"`  // stored claim writes
	Results      int    `json:"results"` // stored result writes
	Attempts     int    `json:"attempts"`
	Conflicts    int    `json:"conflicts"`
	Errors       int    `json:"errors"`
	ErrorSample  string `json:"error_sample,omitempty"`
	// Late: dealt job-ticks whose two writes were not both acked within
	// 1 s of the tick (failed ones included).
	Late int `json:"late"`
	// ClaimUs[i] is tick → claim ack of each dealt job-tick, µs; DoneUs
	// tick → result ack.
	ClaimUs []int64 `json:"claim_us"`
	DoneUs  []int64 `json:"done_us"`
	// Deliveries is the follow's deliveries (handler calls) in the window.
	Deliveries  int64         `json:"deliveries"`
	WallSeconds float64       `json:"wall_s"`
	UserSeconds float64       `json:"cpu_user_s"`
	SysSeconds  float64       `json:"cpu_sys_s"`
	MaxRSSKiB   int64         `json:"max_rss_kib"`
	GCCycles    uint32        `json:"gc_cycles"` // in the window
	NATS        procstat.NATS `json:"nats"`      // nc.Stats() delta over the window
	Error       string        `json:"error,omitempty"`
}

// clientMain is the child process: it never returns normally.
func clientMain() {
	var cfg clientConfig
	if err := json.Unmarshal([]byte(os.Getenv(clientEnv)), &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "client: bad %s: %v\n", clientEnv, err)
		os.Exit(2)
	}
	err := runClient(cfg, os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "client %d: %v\n", cfg.Index, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// client is one client's state while it ticks.
type client struct {
	cfg    clientConfig
	nc     *nats.Conn
	bucket *kv.Bucket
	keys   []string
	index  map[string]int // key → job index, read-only once ticking
	revs   []atomic.Uint64
	value  []byte
	holder string // the lease id its claims carry

	deliveries atomic.Int64
	token      atomic.Uint64

	mu        sync.Mutex // guards the fields below
	claims    int
	results   int
	attempts  int
	conflicts int
	errs      int
	errSample string
	late      int
	claimUs   []int64
	doneUs    []int64
	done      []int // by second of the window
}

func runClient(cfg clientConfig, stdin io.Reader, stdout io.Writer) error {
	ctx := context.Background()
	nc, err := nats.Connect(cfg.URL, nats.Name(fmt.Sprintf("cronlock-floor-c%d", cfg.Index)), nats.MaxReconnects(-1))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	b, err := kv.Open(ctx, js, kv.Config{Name: bucketName})
	if err != nil {
		return err
	}
	c := &client{
		cfg: cfg, nc: nc, bucket: b,
		keys: make([]string, cfg.Jobs), index: make(map[string]int, cfg.Jobs),
		revs:   make([]atomic.Uint64, cfg.Jobs),
		value:  makeValue(cfg.Value),
		holder: fmt.Sprintf("c%d-%s", cfg.Index, nuid.Next()),
	}
	for i := range cfg.Jobs {
		c.keys[i] = keyName(i)
		c.index[c.keys[i]] = i
	}
	// The follow cronlock's scheduler keeps of every record: headers only,
	// every key, last per subject then every new write.
	f, err := b.Follow(ctx, c.heard)
	if err != nil {
		return err
	}
	defer f.Stop()
	select {
	case <-f.CaughtUp():
	case <-time.After(10 * time.Second):
		return fmt.Errorf("follow did not catch up")
	}

	in := bufio.NewReader(stdin)
	start, end, err := childproc.Handshake(in, stdout)
	if err != nil {
		return err
	}
	rep := c.run(ctx, start, end)
	out, _ := json.Marshal(rep)
	if _, err := stdout.Write(append(out, '\n')); err != nil {
		return err
	}
	io.Copy(io.Discard, in) // until the parent closes stdin; then f.Stop
	return nil
}

// heard is the follow's handler: every write of every key, in stream order.
func (c *client) heard(key string, rev uint64, _ time.Time, _ nats.Header) {
	c.deliveries.Add(1)
	if j, ok := c.index[key]; ok {
		c.learn(j, rev)
	}
}

// learn raises job j's known revision to rev.
func (c *client) learn(j int, rev uint64) {
	for {
		old := c.revs[j].Load()
		if rev <= old || c.revs[j].CompareAndSwap(old, rev) {
			return
		}
	}
}

// run ticks over the window and returns the report.
func (c *client) run(ctx context.Context, start, end time.Time) *clientReport {
	ticks := windowTicks(start, end)
	c.done = make([]int, len(ticks))
	time.Sleep(time.Until(start.Add(-guard)))
	if c.cfg.CPUProfile != "" {
		if pf, err := os.Create(c.cfg.CPUProfile); err == nil {
			defer pf.Close()
			if err := pprof.StartCPUProfile(pf); err == nil {
				defer pprof.StopCPUProfile()
			}
		}
	}
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	ru0 := procstat.Rusage()
	st0 := c.nc.Stats()
	d0 := c.deliveries.Load()
	t0 := time.Now()

	var wg sync.WaitGroup
	n := uint32(c.cfg.Clients)
	for i, t := range ticks {
		time.Sleep(time.Until(t))
		sec := strconv.FormatInt(t.Unix(), 10)
		lastTick := t.UTC().Format(time.RFC3339Nano)
		var mine []int
		for j, key := range c.keys {
			if dealt(key, sec, n) == uint32(c.cfg.Index) {
				mine = append(mine, j)
			}
		}
		if c.cfg.Batch {
			wg.Go(func() { c.tickBatch(ctx, i, mine, t, lastTick) })
			continue
		}
		for _, j := range mine {
			wg.Go(func() { c.tick(ctx, i, j, t, lastTick) })
		}
	}
	wg.Wait()
	time.Sleep(time.Until(end))

	ru1 := procstat.Rusage()
	st1 := c.nc.Stats()
	d1 := c.deliveries.Load()
	wall := time.Since(t0)
	runtime.ReadMemStats(&ms1)

	c.mu.Lock()
	defer c.mu.Unlock()
	rep := &clientReport{
		Index: c.cfg.Index, PID: os.Getpid(),
		DoneBySecond: c.done,
		Claims:       c.claims, Results: c.results, Attempts: c.attempts,
		Conflicts: c.conflicts, Errors: c.errs, ErrorSample: c.errSample, Late: c.late,
		ClaimUs: c.claimUs, DoneUs: c.doneUs,
		Deliveries:  d1 - d0,
		WallSeconds: wall.Seconds(),
		UserSeconds: ru1.User - ru0.User, SysSeconds: ru1.Sys - ru0.Sys,
		MaxRSSKiB: ru1.MaxRSSKiB, GCCycles: ms1.NumGC - ms0.NumGC,
		NATS: procstat.NATSDelta(st0, st1),
	}
	for _, d := range c.done {
		rep.JobTicks += d
	}
	return rep
}

// tick is one dealt job-tick: the claim, then at once the result.
func (c *client) tick(ctx context.Context, sec, j int, tick time.Time, lastTick string) {
	tok := strconv.FormatUint(c.token.Add(1), 10)
	rev, err := c.put(ctx, c.claimWrite(j, tick, lastTick, tok), j)
	claimAt := time.Since(tick)
	if err != nil {
		c.failed(err)
		return
	}
	_, err = c.put(ctx, c.resultWrite(j, tick, lastTick, tok, rev), j)
	doneAt := time.Since(tick)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.errs++
		c.sample(err)
	}
	c.countLocked(sec, claimAt, doneAt, err == nil)
}

// countLocked counts one claimed job-tick of the window's second sec
// (c.mu held): its claim's latency, and its result's if it was stored.
func (c *client) countLocked(sec int, claimAt, doneAt time.Duration, stored bool) {
	c.claims++
	c.claimUs = append(c.claimUs, claimAt.Microseconds())
	if !stored {
		c.late++
		return
	}
	c.results++
	c.doneUs = append(c.doneUs, doneAt.Microseconds())
	c.done[sec]++
	if doneAt > time.Second {
		c.late++
	}
}

// claimWrite is key j's claim of tick: held by this client, with the
// record's headers, at the key's last known revision.
func (c *client) claimWrite(j int, tick time.Time, lastTick, tok string) kv.Write {
	return kv.Write{Key: c.keys[j], Value: c.value, Expected: c.revs[j].Load(), Header: nats.Header{
		lastTickHeader: {lastTick},
		holderHeader:   {c.holder},
		tokenHeader:    {tok},
		successHeader:  {strconv.FormatInt(tick.Unix()-1, 10)},
		defHeader:      {definitionHash},
	}}
}

// resultWrite is key j's result of tick, on the claim's revision rev: the
// lock freed, the run's outcome.
func (c *client) resultWrite(j int, tick time.Time, lastTick, tok string, rev uint64) kv.Write {
	return kv.Write{Key: c.keys[j], Value: c.value, Expected: rev, Header: nats.Header{
		lastTickHeader: {lastTick},
		tokenHeader:    {tok},
		successHeader:  {strconv.FormatInt(tick.Unix(), 10)},
		defHeader:      {definitionHash},
		runHeader:      {c.holder},
	}}
}

// tickBatch is tick for all of a second's dealt keys at once (-batch):
// the claims sent as asynchronous publishes from this one goroutine, so
// that the NATS client coalesces them into few socket writes, their acks
// awaited, then the results the same way. A conflict or error drops the
// key's tick (counted); there is no retry.
func (c *client) tickBatch(ctx context.Context, sec int, js []int, tick time.Time, lastTick string) {
	toks := make([]string, len(js))
	claims := make([]kv.Write, len(js))
	for n, j := range js {
		toks[n] = strconv.FormatUint(c.token.Add(1), 10)
		claims[n] = c.claimWrite(j, tick, lastTick, toks[n])
	}
	revs := c.putAll(ctx, js, claims)
	claimAt := time.Since(tick)
	var results []kv.Write
	var rjs []int
	for n, j := range js {
		if revs[n] == 0 {
			continue
		}
		rjs = append(rjs, j)
		results = append(results, c.resultWrite(j, tick, lastTick, toks[n], revs[n]))
	}
	done := c.putAll(ctx, rjs, results)
	doneAt := time.Since(tick)
	c.mu.Lock()
	defer c.mu.Unlock()
	for n := range rjs {
		c.countLocked(sec, claimAt, doneAt, done[n] != 0)
	}
}

// putAll sends ws asynchronously and waits for every ack; it returns each
// write's revision, 0 for one that failed (counted as an error, or a
// conflict).
func (c *client) putAll(ctx context.Context, js []int, ws []kv.Write) []uint64 {
	futures := make([]jetstream.PubAckFuture, len(ws))
	revs := make([]uint64, len(ws))
	for n, w := range ws {
		f, err := c.bucket.PutAsync(w)
		if err != nil {
			c.failed(err)
			continue
		}
		futures[n] = f
	}
	for n, f := range futures {
		if f == nil {
			continue
		}
		select {
		case ack := <-f.Ok():
			revs[n] = ack.Sequence
			c.learn(js[n], ack.Sequence)
		case err := <-f.Err():
			if kv.IsConflict(err) {
				c.mu.Lock()
				c.conflicts++
				c.mu.Unlock()
			}
			c.failed(err)
		case <-ctx.Done():
			c.failed(ctx.Err())
		}
	}
	c.mu.Lock()
	c.attempts += len(ws)
	c.mu.Unlock()
	return revs
}

func (c *client) failed(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errs++
	c.late++
	c.sample(err)
}

func (c *client) sample(err error) {
	if c.errSample == "" {
		c.errSample = err.Error()
	}
}

// put is one compare-and-swap write; a conflict is counted, the key's
// revision read again and the write tried once more.
func (c *client) put(ctx context.Context, w kv.Write, j int) (uint64, error) {
	rev, err := c.bucket.Put(ctx, w)
	attempts, conflicts := 1, 0
	if kv.IsConflict(err) {
		conflicts++
		var e *kv.Entry
		if e, err = c.bucket.Last(ctx, w.Key); err == nil {
			w.Expected = 0
			if e != nil {
				w.Expected = e.Revision
			}
			attempts++
			rev, err = c.bucket.Put(ctx, w)
		}
	}
	c.mu.Lock()
	c.attempts += attempts
	c.conflicts += conflicts
	c.mu.Unlock()
	if err != nil {
		return 0, err
	}
	c.learn(j, rev)
	return rev, nil
}

// cronlock-like record headers: about 300 bytes a write with the framing
// and the expected-sequence header nats.go adds.
const (
	lastTickHeader = "Cronlock-Last-Tick"
	holderHeader   = "Cronlock-Holder"
	tokenHeader    = "Cronlock-Token"
	successHeader  = "Cronlock-Last-Success"
	defHeader      = "Cronlock-Definition"
	runHeader      = "Cronlock-Run"
	definitionHash = "sha256-4f1c2e0a9b7d3c5e8f6a1b2c3d4e5f60718293a4b5c6d7e8f9012345"
)

// windowTicks is the whole seconds in [start, end).
func windowTicks(start, end time.Time) []time.Time {
	var out []time.Time
	t := start.Truncate(time.Second)
	if t.Before(start) {
		t = t.Add(time.Second)
	}
	for ; t.Before(end); t = t.Add(time.Second) {
		out = append(out, t)
	}
	return out
}

// dealt is the client index fnv32a(key + sec) % n: the one that writes
// key's tick at second sec (decimal Unix seconds).
func dealt(key, sec string, n uint32) uint32 {
	const offset32, prime32 = 2166136261, 16777619
	h := uint32(offset32)
	for i := 0; i < len(key); i++ {
		h ^= uint32(key[i])
		h *= prime32
	}
	for i := 0; i < len(sec); i++ {
		h ^= uint32(sec[i])
		h *= prime32
	}
	return h % n
}

func keyName(i int) string { return fmt.Sprintf("floor.job-%04d", i) }

// makeValue is n bytes of printable filler (the value of a JSON record).
func makeValue(n int) []byte {
	v := make([]byte, n)
	for i := range v {
		v[i] = 'a' + byte(i%26)
	}
	return v
}
