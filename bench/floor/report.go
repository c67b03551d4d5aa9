package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/cronlock/cronlock/bench/internal/procstat"
)

// result is the merged outcome of one run.
type result struct {
	Config config    `json:"config"`
	Start  time.Time `json:"start"` // first tick; the window opens guard earlier
	End    time.Time `json:"end"`
	Ticks  int       `json:"ticks"` // whole seconds in [Start, End)
	// JobTicks is jobs × Ticks: the job-ticks of the window, the
	// denominator of every per-job-tick figure.
	JobTicks int `json:"job_ticks"`
	// Done is the job-ticks whose claim and result were both stored.
	Done     int `json:"job_ticks_done"`
	Claims   int `json:"claims"`
	Results  int `json:"results"`
	Writes   int `json:"writes"`   // claims + results
	Attempts int `json:"attempts"` // Put calls, conflict retries included
	// StoredWrites is the bucket stream's last sequence at the window's
	// end minus at its start.
	StoredWrites uint64 `json:"stored_writes"`
	Conflicts    int    `json:"conflicts"`
	Errors       int    `json:"errors"`
	ErrorSample  string `json:"error_sample,omitempty"`
	// Late: job-ticks whose two writes were not both acked within 1 s of
	// the tick.
	Late int `json:"late"`
	// SecondsShort counts the window's seconds in which fewer (or more)
	// than -jobs job-ticks were done.
	SecondsShort int  `json:"seconds_short"`
	OK           bool `json:"ok"` // every job-tick written exactly twice, no conflict or error

	// Tick → claim ack and tick → result ack, milliseconds.
	ClaimP50Ms float64 `json:"claim_ack_p50_ms"`
	ClaimP99Ms float64 `json:"claim_ack_p99_ms"`
	ClaimMaxMs float64 `json:"claim_ack_max_ms"`
	DoneP50Ms  float64 `json:"result_ack_p50_ms"`
	DoneP99Ms  float64 `json:"result_ack_p99_ms"`

	// CPU per job-tick, µs: the parent's (the nats-server's), each
	// client's, all clients', and everything.
	ServerCPUUs  float64   `json:"server_cpu_us_per_job_tick"`
	ClientCPUUs  []float64 `json:"client_cpu_us_per_job_tick"`
	ClientsCPUUs float64   `json:"clients_cpu_us_per_job_tick"`
	CPUUs        float64   `json:"cpu_us_per_job_tick"`
	ServerCPUPct float64   `json:"server_cpu_pct"`

	Server  serverSummary   `json:"server"`
	Clients []clientSummary `json:"clients"`
	// RecvPerClient is the messages each client's connection received per
	// job-tick (deliveries, its own acks, pull-consumer status): the mean.
	RecvPerClient float64 `json:"msgs_received_per_client_per_job_tick"`
	// DeliveriesPerClient is the follow's deliveries per client per
	// job-tick, the mean: 2 when every claim and result is delivered, less
	// when results replace claims before the consumer reads them.
	DeliveriesPerClient float64 `json:"deliveries_per_client_per_job_tick"`
}

type serverSummary struct {
	InPerJobTick  float64 `json:"in_msgs_per_job_tick"`
	OutPerJobTick float64 `json:"out_msgs_per_job_tick"`
	// The same without the parent's own connection (its stream info
	// requests): the clients' traffic only.
	ClientsInPerJobTick  float64 `json:"clients_in_msgs_per_job_tick"`
	ClientsOutPerJobTick float64 `json:"clients_out_msgs_per_job_tick"`
	InBytesPerJobTick    float64 `json:"in_bytes_per_job_tick"`
	OutBytesPerJobTick   float64 `json:"out_bytes_per_job_tick"`
	CPUSeconds           float64 `json:"cpu_s"`
	SlowConsumers        int64   `json:"slow_consumers"`
}

type clientSummary struct {
	Index    int     `json:"index"`
	JobTicks int     `json:"job_ticks"` // dealt and done
	CPUPct   float64 `json:"cpu_pct"`
	CPUUs    float64 `json:"cpu_us_per_job_tick"` // over all the window's job-ticks
	// CPU per job-tick this client wrote (its own CPU over its dealt
	// job-ticks, deliveries of the others' writes included).
	CPUUsPerOwn     float64       `json:"cpu_us_per_own_job_tick"`
	RecvPerJobTick  float64       `json:"in_msgs_per_job_tick"`
	SentPerJobTick  float64       `json:"out_msgs_per_job_tick"`
	DeliveriesPerJT float64       `json:"deliveries_per_job_tick"`
	GCCycles        uint32        `json:"gc_cycles"`
	MaxRSSMiB       float64       `json:"max_rss_mib"`
	NATS            procstat.NATS `json:"nats"`
}

func merge(c config, start, end time.Time, reps []*clientReport, s0, s1 serverSnap) *result {
	r := &result{Config: c, Start: start, End: end}
	r.Ticks = len(windowTicks(start, end))
	r.JobTicks = c.Jobs * r.Ticks
	jt := float64(max(r.JobTicks, 1))

	bySecond := make([]int, r.Ticks)
	var claimUs, doneUs []int64
	var clientsCPU float64
	for _, rep := range reps {
		r.Done += rep.JobTicks
		r.Claims += rep.Claims
		r.Results += rep.Results
		r.Attempts += rep.Attempts
		r.Conflicts += rep.Conflicts
		r.Errors += rep.Errors
		r.Late += rep.Late
		if r.ErrorSample == "" {
			r.ErrorSample = rep.ErrorSample
		}
		for i, d := range rep.DoneBySecond {
			if i < len(bySecond) {
				bySecond[i] += d
			}
		}
		claimUs = append(claimUs, rep.ClaimUs...)
		doneUs = append(doneUs, rep.DoneUs...)
		cpu := rep.UserSeconds + rep.SysSeconds
		clientsCPU += cpu
		cs := clientSummary{
			Index: rep.Index, JobTicks: rep.JobTicks,
			CPUPct:          100 * cpu / max(rep.WallSeconds, 1e-9),
			CPUUs:           1e6 * cpu / jt,
			CPUUsPerOwn:     1e6 * cpu / float64(max(rep.JobTicks, 1)),
			RecvPerJobTick:  float64(rep.NATS.InMsgs) / jt,
			SentPerJobTick:  float64(rep.NATS.OutMsgs) / jt,
			DeliveriesPerJT: float64(rep.Deliveries) / jt,
			GCCycles:        rep.GCCycles,
			MaxRSSMiB:       float64(rep.MaxRSSKiB) / 1024,
			NATS:            rep.NATS,
		}
		r.Clients = append(r.Clients, cs)
		r.ClientCPUUs = append(r.ClientCPUUs, cs.CPUUs)
		r.RecvPerClient += cs.RecvPerJobTick / float64(len(reps))
		r.DeliveriesPerClient += cs.DeliveriesPerJT / float64(len(reps))
	}
	r.Writes = r.Claims + r.Results
	for _, n := range bySecond {
		if n != c.Jobs {
			r.SecondsShort++
		}
	}
	r.StoredWrites = s1.lastSeq - s0.lastSeq
	r.OK = len(reps) == c.Clients && r.Done == r.JobTicks && r.Claims == r.JobTicks && r.Results == r.JobTicks &&
		r.StoredWrites == uint64(2*r.JobTicks) && r.SecondsShort == 0 && r.Conflicts == 0 && r.Errors == 0

	r.ClaimP50Ms, r.ClaimP99Ms, r.ClaimMaxMs = quantileMs(claimUs, 0.5), quantileMs(claimUs, 0.99), quantileMs(claimUs, 1)
	r.DoneP50Ms, r.DoneP99Ms = quantileMs(doneUs, 0.5), quantileMs(doneUs, 0.99)

	serverCPU := s1.ru.User + s1.ru.Sys - s0.ru.User - s0.ru.Sys
	r.Server = serverSummary{
		InPerJobTick:         float64(s1.inMsgs-s0.inMsgs) / jt,
		OutPerJobTick:        float64(s1.outMsgs-s0.outMsgs) / jt,
		ClientsInPerJobTick:  float64(s1.inMsgs-s0.inMsgs-(s1.ownOut-s0.ownOut)) / jt,
		ClientsOutPerJobTick: float64(s1.outMsgs-s0.outMsgs-(s1.ownIn-s0.ownIn)) / jt,
		InBytesPerJobTick:    float64(s1.inBytes-s0.inBytes) / jt,
		OutBytesPerJobTick:   float64(s1.outBytes-s0.outBytes) / jt,
		CPUSeconds:           serverCPU,
		SlowConsumers:        s1.slowConsumers - s0.slowConsumers,
	}
	r.ServerCPUPct = 100 * serverCPU / (end.Sub(start) + guard).Seconds()
	r.ServerCPUUs = 1e6 * serverCPU / jt
	r.ClientsCPUUs = 1e6 * clientsCPU / jt
	r.CPUUs = r.ServerCPUUs + r.ClientsCPUUs
	return r
}

// quantileMs is the p-quantile of µs samples, in milliseconds.
func quantileMs(us []int64, p float64) float64 {
	if len(us) == 0 {
		return 0
	}
	s := slices.Clone(us)
	slices.Sort(s)
	return float64(s[int(p*float64(len(s)-1))]) / 1000
}

func printSummary(w io.Writer, r *result) {
	c := r.Config
	fmt.Fprintf(w, "\n== floor: %d clients × %d jobs, value %d B, %v (ticks %s–%s: %d × %d jobs = %d job-ticks)\n",
		c.Clients, c.Jobs, c.Value, c.Duration,
		r.Start.Format(time.TimeOnly), r.Start.Add(time.Duration(max(r.Ticks-1, 0))*time.Second).Format(time.TimeOnly),
		r.Ticks, c.Jobs, r.JobTicks)
	verdict := "OK: every job-tick written exactly twice"
	if !r.OK {
		verdict = "NOT every job-tick written exactly twice"
	}
	fmt.Fprintf(w, "%s: done %d, claims %d, results %d, writes %d (stored %d, attempts %d), conflicts %d, errors %d, late > 1 s %d, seconds short %d\n",
		verdict, r.Done, r.Claims, r.Results, r.Writes, r.StoredWrites, r.Attempts, r.Conflicts, r.Errors, r.Late, r.SecondsShort)
	if r.ErrorSample != "" {
		fmt.Fprintf(w, "  first error: %s\n", r.ErrorSample)
	}
	fmt.Fprintf(w, "tick → claim ack: p50 %.2f ms, p99 %.2f ms, max %.2f ms; tick → result ack: p50 %.2f ms, p99 %.2f ms\n",
		r.ClaimP50Ms, r.ClaimP99Ms, r.ClaimMaxMs, r.DoneP50Ms, r.DoneP99Ms)
	var each []string
	for _, cs := range r.Clients {
		each = append(each, fmt.Sprintf("c%d %.0f", cs.Index, cs.CPUUs))
	}
	fmt.Fprintf(w, "CPU per job-tick: %.0f µs = server (parent) %.0f + clients %.0f (%s); server CPU %.1f%%\n",
		r.CPUUs, r.ServerCPUUs, r.ClientsCPUUs, strings.Join(each, ", "), r.ServerCPUPct)
	s := r.Server
	fmt.Fprintf(w, "server msgs per job-tick: in %.2f / out %.2f (the clients' only: %.2f / %.2f); bytes in %.0f / out %.0f; slow consumers %d\n",
		s.InPerJobTick, s.OutPerJobTick, s.ClientsInPerJobTick, s.ClientsOutPerJobTick,
		s.InBytesPerJobTick, s.OutBytesPerJobTick, s.SlowConsumers)
	fmt.Fprintf(w, "msgs received per client per job-tick: mean %.2f, of which follow deliveries %.2f (2 = claim and result; a claim replaced before the consumer read it is skipped);\n ", r.RecvPerClient, r.DeliveriesPerClient)
	for _, cs := range r.Clients {
		fmt.Fprintf(w, " c%d %.2f (deliveries %.2f, sent %.2f, %d job-ticks, %.0f µs per own job-tick, CPU %.1f%%, %d GCs, RSS %.0f MiB);",
			cs.Index, cs.RecvPerJobTick, cs.DeliveriesPerJT, cs.SentPerJobTick, cs.JobTicks, cs.CPUUsPerOwn, cs.CPUPct, cs.GCCycles, cs.MaxRSSMiB)
	}
	fmt.Fprintln(w)
}
