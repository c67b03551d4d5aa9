package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cronlock/cronlock/bench/internal/procstat"
)

// dailySchedule is job i of n's schedule in idle mode: once a day, the n
// jobs spread evenly over the day's seconds, so that about n/86,400 fire
// per second (1.2 for 100,000) — "almost none", like a real large crontab.
func dailySchedule(i, n int) string {
	sod := int(int64(i) * 86400 / int64(max(n, 1)))
	return fmt.Sprintf("%d %d %d * * *", sod%60, sod/60%60, sod/3600)
}

// idleSample is what an idle-mode replica measures over its window.
type idleSample struct {
	WindowSeconds float64       `json:"window_s"`
	CPUSeconds    float64       `json:"cpu_s"`      // user + sys over the window
	Goroutines    int           `json:"goroutines"` // at the window's end
	RSSKiB        int64         `json:"rss_kib"`    // VmRSS at the window's end
	HeapInuse     uint64        `json:"heap_inuse_bytes"`
	NATS          procstat.NATS `json:"nats"` // nc.Stats() delta over the window
	// Over the settle period (Run → window): the start-up burst.
	SettleCPUSeconds float64 `json:"settle_cpu_s"`
	SettleInMsgs     uint64  `json:"settle_in_msgs"`
}

// idleWatch measures one idle-mode replica over the settle period (from
// Run) and the window.
type idleWatch struct {
	done   chan struct{}
	sample idleSample
}

// watchIdle starts measuring; ru and st are the replica's usage and
// connection statistics when Run was called.
func watchIdle(nc *nats.Conn, ru procstat.Usage, st nats.Statistics, from, to time.Time) *idleWatch {
	w := &idleWatch{done: make(chan struct{})}
	go func() {
		defer close(w.done)
		time.Sleep(time.Until(from))
		ru0, st0, t0 := procstat.Rusage(), nc.Stats(), time.Now()
		time.Sleep(time.Until(to))
		ru1, st1, t1 := procstat.Rusage(), nc.Stats(), time.Now()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		w.sample = idleSample{
			WindowSeconds:    t1.Sub(t0).Seconds(),
			CPUSeconds:       ru1.User + ru1.Sys - ru0.User - ru0.Sys,
			Goroutines:       runtime.NumGoroutine(),
			RSSKiB:           vmRSSKiB(),
			HeapInuse:        ms.HeapInuse,
			NATS:             procstat.NATSDelta(st0, st1),
			SettleCPUSeconds: ru0.User + ru0.Sys - ru.User - ru.Sys,
			SettleInMsgs:     st0.InMsgs - st.InMsgs,
		}
	}()
	return w
}

func (w *idleWatch) result() *idleSample {
	<-w.done
	return &w.sample
}

// vmRSSKiB is this process's resident set now (Linux /proc; 0 elsewhere).
// getrusage gives only the peak.
func vmRSSKiB() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// idleSummary is the merged idle-mode outcome.
type idleSummary struct {
	// Per replica: spawn → connected, Locker and Scheduler made, every job
	// added (READY), i.e. ready to call Run, which is when the daemon's
	// /readyz turns 200; ReadyMaxS is the slowest replica's.
	ReadyS    []float64 `json:"ready_s"`
	ReadyMaxS float64   `json:"ready_max_s"`
	// The start-up burst, Run → the window (the settle period), per
	// replica: CPU % of a core and messages received.
	SettleCPUPct []float64 `json:"settle_cpu_pct_of_a_core"`
	SettleRecv   []uint64  `json:"settle_msgs_received"`
	SettleS      float64   `json:"settle_s"`
	// The server over the settle period.
	SettleServerCPUPct float64 `json:"settle_server_cpu_pct_of_a_core"`
	SettleServerIn     int64   `json:"settle_server_in_msgs"`
	SettleServerOut    int64   `json:"settle_server_out_msgs"`

	Goroutines []int     `json:"goroutines"`
	RSSMiB     []float64 `json:"rss_mib"`
	HeapMiB    []float64 `json:"heap_inuse_mib"`
	CPUPct     []float64 `json:"cpu_pct_of_a_core"`
	RecvMsgs   []uint64  `json:"msgs_received"` // per replica over the window

	// The parent process: nats-server, plus the bench's own connection.
	ServerRSSMiB     float64 `json:"server_process_rss_mib"`
	ServerGoroutines int     `json:"server_process_goroutines"`
	ServerCPUPct     float64 `json:"server_cpu_pct_of_a_core"`
	ServerInMsgs     int64   `json:"server_in_msgs"`
	ServerOutMsgs    int64   `json:"server_out_msgs"`
	StoredWrites     uint64  `json:"stored_writes"` // all streams, over the window
	WindowS          float64 `json:"window_s"`
}

// mergeIdle merges the replicas' idle samples with the server's snapshots
// at Run (sr), the window's start (s0) and end (s1).
func mergeIdle(reps []*replicaReport, ready map[string]float64, sr, s0, s1 serverSnap, settle, window time.Duration) *idleSummary {
	is := &idleSummary{WindowS: window.Seconds(), SettleS: settle.Seconds()}
	for _, rep := range reps {
		is.ReadyS = append(is.ReadyS, ready[rep.Name])
		is.ReadyMaxS = max(is.ReadyMaxS, ready[rep.Name])
		s := rep.Idle
		if s == nil {
			continue
		}
		is.SettleCPUPct = append(is.SettleCPUPct, 100*s.SettleCPUSeconds/max(settle.Seconds(), 1e-9))
		is.SettleRecv = append(is.SettleRecv, s.SettleInMsgs)
		is.Goroutines = append(is.Goroutines, s.Goroutines)
		is.RSSMiB = append(is.RSSMiB, float64(s.RSSKiB)/1024)
		is.HeapMiB = append(is.HeapMiB, float64(s.HeapInuse)/(1<<20))
		is.CPUPct = append(is.CPUPct, 100*s.CPUSeconds/max(s.WindowSeconds, 1e-9))
		is.RecvMsgs = append(is.RecvMsgs, s.NATS.InMsgs)
	}
	is.ServerRSSMiB = float64(s1.rssKiB) / 1024
	is.ServerGoroutines = s1.goroutines
	is.ServerCPUPct = 100 * (s1.ru.User + s1.ru.Sys - s0.ru.User - s0.ru.Sys) / window.Seconds()
	is.ServerInMsgs, is.ServerOutMsgs = s1.inMsgs-s0.inMsgs, s1.outMsgs-s0.outMsgs
	is.StoredWrites = totalWrites(s0, s1)
	is.SettleServerCPUPct = 100 * (s0.ru.User + s0.ru.Sys - sr.ru.User - sr.ru.Sys) / max(settle.Seconds(), 1e-9)
	is.SettleServerIn, is.SettleServerOut = s0.inMsgs-sr.inMsgs, s0.outMsgs-sr.outMsgs
	return is
}

func printIdle(w io.Writer, is *idleSummary) {
	if is == nil {
		return
	}
	fmt.Fprintf(w, "idle: ready (spawn → connected, every job added, Run next) max %.2f s, per replica %s s\n",
		is.ReadyMaxS, floats(is.ReadyS, "%.2f"))
	fmt.Fprintf(w, "idle settle (first %.0f s of Run): replica CPU %s %% of a core, msgs received %s; server CPU %.1f %% of a core, msgs in %d / out %d\n",
		is.SettleS, floats(is.SettleCPUPct, "%.1f"), uints(is.SettleRecv), is.SettleServerCPUPct, is.SettleServerIn, is.SettleServerOut)
	fmt.Fprintf(w, "idle window %.0f s, per replica: goroutines %s; RSS %s MiB; heap in use %s MiB; CPU %s %% of a core; msgs received %s\n",
		is.WindowS, ints(is.Goroutines), floats(is.RSSMiB, "%.0f"), floats(is.HeapMiB, "%.0f"), floats(is.CPUPct, "%.2f"), uints(is.RecvMsgs))
	fmt.Fprintf(w, "idle window, parent process (embedded nats-server): RSS %.0f MiB, goroutines %d, CPU %.2f %% of a core; server msgs in %d / out %d; stored writes %d\n",
		is.ServerRSSMiB, is.ServerGoroutines, is.ServerCPUPct, is.ServerInMsgs, is.ServerOutMsgs, is.StoredWrites)
}

func printIdleSweep(w io.Writer, rs []*result) {
	fmt.Fprintln(w, "\n== idle sweep")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "replicas\tjobs\tready max s\tgoroutines (each)\tRSS MiB (each)\theap MiB (each)\tCPU % (each)\tserver RSS MiB\tserver CPU %\tserver in/out msgs\t")
	for _, r := range rs {
		is := r.Idle
		if is == nil {
			continue
		}
		fmt.Fprintf(tw, "%d\t%d\t%.2f\t%s\t%s\t%s\t%s\t%.0f\t%.2f\t%d/%d\t\n", r.Config.Replicas, r.Config.Jobs, is.ReadyMaxS,
			ints(is.Goroutines), floats(is.RSSMiB, "%.0f"), floats(is.HeapMiB, "%.0f"), floats(is.CPUPct, "%.2f"),
			is.ServerRSSMiB, is.ServerCPUPct, is.ServerInMsgs, is.ServerOutMsgs)
	}
	tw.Flush()
}

func floats(v []float64, f string) string {
	p := make([]string, len(v))
	for i, x := range v {
		p[i] = fmt.Sprintf(f, x)
	}
	return strings.Join(p, "/")
}

func ints(v []int) string {
	p := make([]string, len(v))
	for i, x := range v {
		p[i] = strconv.Itoa(x)
	}
	return strings.Join(p, "/")
}

func uints(v []uint64) string {
	p := make([]string, len(v))
	for i, x := range v {
		p[i] = strconv.FormatUint(x, 10)
	}
	return strings.Join(p, "/")
}
