package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cronlock/cronlock/scheduler"
)

// lockTracer follows the stored writes to the state records of the first N
// jobs (an ordered consumer on the history bucket's stream, as any watcher
// would): a job's record is its lock, so the parent can tell who held each
// job's lock when, and whether a hold ran the job or only found its tick
// already claimed. A write whose holderHeader names a lease holds the lock
// for that lease; a write without it (or a delete or purge) frees it.
type lockTracer struct {
	mu     sync.Mutex
	events map[int][]lockEvent // job index → events in stream order
	cc     jetstream.ConsumeContext
}

// holderHeader is the scheduler's header naming the lease that holds a
// job's state record (scheduler/hold.go); absent while the lock is free.
const holderHeader = "Cronlock-Holder"

type lockEvent struct {
	At    time.Time // server's stored time
	Lease string    // the holding lease; "" when the write frees the lock
	Owner string    // the holder's owner ID, from the record
	Free  bool
}

func startTracer(ctx context.Context, js jetstream.JetStream, n int) (*lockTracer, error) {
	prefix := "$KV." + scheduler.DefaultHistoryBucket + "."
	subjects := make([]string, n)
	for i := range n {
		subjects[i] = prefix + jobName(i)
	}
	cons, err := js.OrderedConsumer(ctx, "KV_"+scheduler.DefaultHistoryBucket, jetstream.OrderedConsumerConfig{
		FilterSubjects: subjects,
		DeliverPolicy:  jetstream.DeliverNewPolicy,
	})
	if err != nil {
		return nil, err
	}
	t := &lockTracer{events: map[int][]lockEvent{}}
	idx := make(map[string]int, n)
	for i, s := range subjects {
		idx[s] = i
	}
	t.cc, err = cons.Consume(func(m jetstream.Msg) {
		md, err := m.Metadata()
		if err != nil {
			return
		}
		ev := lockEvent{At: md.Timestamp}
		h := m.Headers()
		ev.Lease = h.Get(holderHeader)
		if ev.Lease == "" || h.Get("KV-Operation") != "" || h.Get(jetstream.MarkerReasonHeader) != "" {
			ev.Free, ev.Lease = true, ""
		} else {
			var rec struct {
				Holder struct {
					Owner string `json:"owner"`
				} `json:"holder"`
			}
			json.Unmarshal(m.Data(), &rec)
			ev.Owner = rec.Holder.Owner
		}
		t.mu.Lock()
		i := idx[m.Subject()]
		t.events[i] = append(t.events[i], ev)
		t.mu.Unlock()
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

func (t *lockTracer) stop() map[int][]lockEvent {
	t.cc.Stop()
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.events
}

// traceSummary is what the lock trace shows for the traced jobs, over the
// checked window.
type traceSummary struct {
	Jobs int `json:"jobs"`
	// Holds of a job's lock (the write that takes it → the one that frees
	// it) per job-tick, split into
	// those during which the holder ran the job and the "wasted" ones, in
	// which a replica took the lock only to find the tick already claimed.
	HoldsPerTick      float64 `json:"holds_per_tick"`
	ProductivePerTick float64 `json:"productive_per_tick"`
	WastedPerTick     float64 `json:"wasted_per_tick"`
	ProductiveHoldP50 float64 `json:"productive_hold_p50_ms"`
	ProductiveHoldP99 float64 `json:"productive_hold_p99_ms"`
	WastedHoldP50     float64 `json:"wasted_hold_p50_ms"`
	WastedHoldP99     float64 `json:"wasted_hold_p99_ms"`
	BusyFraction      float64 `json:"busy_fraction"` // of the window, the lock was held
	// At how many ticks the lock was held (by a hold started before the
	// tick, i.e. for an earlier tick) at the tick instant, and how many of
	// those held-at-tick ticks and of the free-at-tick ticks were missing.
	Ticks           int `json:"ticks"`
	HeldAtTick      int `json:"held_at_tick"`
	HeldByWasted    int `json:"held_at_tick_by_wasted_hold"`
	MissingWhenHeld int `json:"missing_when_held"`
	MissingWhenFree int `json:"missing_when_free"`
	// Holds that no release ended: another lease took the record over
	// (after a whole lease unchanged, or a forced release's successor),
	// e.g. a holder that stopped renewing. Their lengths in seconds, and
	// the ticks at which the lock was held by one.
	Expired       int      `json:"expired_holds"`
	ExpiredHolds  []string `json:"expired_hold_list,omitempty"`
	HeldByExpired int      `json:"held_at_tick_by_expired_hold"`
	Timeline      []string `json:"timeline"` // job 0, a few seconds mid-window
}

type hold struct {
	lease, owner string
	from, to     time.Time
	productive   bool
	expired      bool // taken over by another lease, not freed by a write
}

// holdsOf turns a job's events into its holds: a hold begins at the first
// write naming its lease and ends at the first later write that frees the
// lock or names another lease (then it was taken over: expired). A hold
// still open when the trace stops is left out.
func holdsOf(events []lockEvent) []hold {
	var hs []hold
	var cur *hold
	for _, ev := range events {
		switch {
		case !ev.Free && cur == nil:
			cur = &hold{lease: ev.Lease, owner: ev.Owner, from: ev.At}
		case !ev.Free && ev.Lease == cur.lease: // a renewal, or another write of the held record
		case !ev.Free:
			cur.to, cur.expired = ev.At, true
			hs = append(hs, *cur)
			cur = &hold{lease: ev.Lease, owner: ev.Owner, from: ev.At}
		case cur != nil:
			cur.to = ev.At
			hs = append(hs, *cur)
			cur = nil
		}
	}
	return hs
}

func analyzeTrace(events map[int][]lockEvent, reps []*replicaReport, from, to time.Time, n int) *traceSummary {
	ts := &traceSummary{Jobs: n}
	lo, hi := from.Unix(), to.Unix()
	winStart, winEnd := from.Add(-time.Second), to
	var prodD, wasteD []float64
	var busy time.Duration
	holdsIn, prodIn := 0, 0
	for j := range n {
		// Runs of job j: owner → start times; and which ticks ran.
		starts := map[string][]time.Time{}
		ran := map[int64]bool{}
		for _, rep := range reps {
			if j >= len(rep.Runs) {
				continue
			}
			for _, x := range rep.Runs[j] {
				st := time.Unix(x[0], 0).Add(time.Duration(x[1]) * time.Microsecond)
				starts[rep.Name] = append(starts[rep.Name], st)
				ran[x[0]] = true
			}
		}
		hs := holdsOf(events[j])
		for i := range hs {
			h := &hs[i]
			for _, s := range starts[h.owner] {
				if !s.Before(h.from) && !s.After(h.to) {
					h.productive = true
					break
				}
			}
			if h.from.Before(winStart) || h.from.After(winEnd) {
				continue
			}
			holdsIn++
			d := float64(h.to.Sub(h.from).Microseconds()) / 1000
			if h.productive {
				prodIn++
				prodD = append(prodD, d)
			} else {
				wasteD = append(wasteD, d)
			}
			busy += h.to.Sub(h.from)
			if h.expired {
				ts.Expired++
				tick := h.from.Truncate(time.Second)
				ts.ExpiredHolds = append(ts.ExpiredHolds, fmt.Sprintf("%s by %s at %s+%dms for %.1fs",
					jobName(j), h.owner, tick.Format(time.TimeOnly), h.from.Sub(tick).Milliseconds(), h.to.Sub(h.from).Seconds()))
			}
		}
		ts.countTicks(hs, ran, lo, hi)
		if j == 0 {
			ts.addTimeline(hs, from, to)
		}
	}
	perTick := float64(max(ts.Ticks, 1))
	ts.HoldsPerTick = float64(holdsIn) / perTick
	ts.ProductivePerTick = float64(prodIn) / perTick
	ts.WastedPerTick = float64(holdsIn-prodIn) / perTick
	ts.BusyFraction = busy.Seconds() / (float64(n) * winEnd.Sub(winStart).Seconds())
	slices.Sort(prodD)
	slices.Sort(wasteD)
	ts.ProductiveHoldP50, ts.ProductiveHoldP99 = pct(prodD, 0.5), pct(prodD, 0.99)
	ts.WastedHoldP50, ts.WastedHoldP99 = pct(wasteD, 0.5), pct(wasteD, 0.99)
	return ts
}

// countTicks classifies the ticks lo..hi (Unix seconds) of one job by
// whether a hold begun earlier still held its lock at the tick instant.
func (ts *traceSummary) countTicks(hs []hold, ran map[int64]bool, lo, hi int64) {
	for t := lo; t <= hi; t++ {
		ts.Ticks++
		at := time.Unix(t, 0)
		held, wasted, expired := false, false, false
		for _, h := range hs {
			if h.from.Before(at) && h.to.After(at) {
				held, wasted, expired = true, !h.productive, h.expired
				break
			}
		}
		if held {
			ts.HeldAtTick++
			if wasted {
				ts.HeldByWasted++
			}
			if expired {
				ts.HeldByExpired++
			}
			if !ran[t] {
				ts.MissingWhenHeld++
			}
		} else if !ran[t] {
			ts.MissingWhenFree++
		}
	}
}

// addTimeline describes the holds begun in 3 s mid-window.
func (ts *traceSummary) addTimeline(hs []hold, from, to time.Time) {
	mid := from.Add(to.Sub(from) / 2).Truncate(time.Second)
	for _, h := range hs {
		if h.from.Before(mid) || h.from.After(mid.Add(3*time.Second)) {
			continue
		}
		tick := h.from.Truncate(time.Second)
		kind := "found its tick already claimed"
		if h.productive {
			kind = "ran the job"
		}
		if h.expired {
			kind += "; never released: taken over by another lease"
		}
		ts.Timeline = append(ts.Timeline, fmt.Sprintf("%s +%4dms  %s holds %5d ms, %s",
			tick.Format(time.TimeOnly), h.from.Sub(tick).Milliseconds(), h.owner, h.to.Sub(h.from).Milliseconds(), kind))
	}
}

func pct(s []float64, p float64) float64 {
	if len(s) == 0 {
		return 0
	}
	return s[int(p*float64(len(s)-1))]
}

func printTrace(w io.Writer, ts *traceSummary) {
	if ts == nil {
		return
	}
	fmt.Fprintf(w, "lock trace of %d jobs over the checked window (%d job-ticks):\n", ts.Jobs, ts.Ticks)
	fmt.Fprintf(w, "  holds per job-tick %.2f: ran the job %.2f, found the tick already claimed %.2f\n",
		ts.HoldsPerTick, ts.ProductivePerTick, ts.WastedPerTick)
	fmt.Fprintf(w, "  hold time p50/p99: running %.0f/%.0f ms, wasted %.0f/%.0f ms; lock held %.0f%% of the time\n",
		ts.ProductiveHoldP50, ts.ProductiveHoldP99, ts.WastedHoldP50, ts.WastedHoldP99, 100*ts.BusyFraction)
	fmt.Fprintf(w, "  lock still held at the tick instant: %d of %d ticks (%d by a wasted hold); missing: %d of those, %d of the others\n",
		ts.HeldAtTick, ts.Ticks, ts.HeldByWasted, ts.MissingWhenHeld, ts.MissingWhenFree)
	if ts.Expired > 0 {
		fmt.Fprintf(w, "  holds never released (taken over by another lease): %d; the lock was held by one at %d ticks:\n    %s\n",
			ts.Expired, ts.HeldByExpired, strings.Join(ts.ExpiredHolds, "\n    "))
	}
	if len(ts.Timeline) > 0 {
		fmt.Fprintf(w, "  %s, 3 s mid-window (server times; tick = the second the hold began in):\n    %s\n",
			jobName(0), strings.Join(ts.Timeline, "\n    "))
	}
}
