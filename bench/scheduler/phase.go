package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"time"
)

// phaseSampler measures how busy the whole machine is (all cores, every
// process: the replicas and the nats-server) by phase of the second, from
// /proc/stat every 20 ms: every job ticks on the whole second, so the work
// comes in a burst right after it. Linux only; silent elsewhere.
type phaseSampler struct {
	stop chan struct{}
	done chan [10]float64
}

func startPhaseSampler() *phaseSampler {
	p := &phaseSampler{stop: make(chan struct{}), done: make(chan [10]float64, 1)}
	go func() {
		var busy, total [10]float64
		b0, t0, ok := procStat()
		tk := time.NewTicker(20 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-p.stop:
				var out [10]float64
				for i := range out {
					if total[i] > 0 {
						out[i] = 100 * busy[i] / total[i]
					}
				}
				p.done <- out
				return
			case now := <-tk.C:
				b1, t1, ok1 := procStat()
				if ok && ok1 && t1 > t0 {
					// Attribute the interval to the phase of its middle.
					mid := now.Add(-10 * time.Millisecond)
					i := mid.Nanosecond() / int(100*time.Millisecond)
					busy[i] += b1 - b0
					total[i] += t1 - t0
				}
				b0, t0, ok = b1, t1, ok1
			}
		}
	}()
	return p
}

// result returns the machine's CPU busy % per 100 ms phase of the second.
func (p *phaseSampler) result() [10]float64 {
	close(p.stop)
	return <-p.done
}

// procStat returns busy and total jiffies of all CPUs.
func procStat() (busy, total float64, ok bool) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return 0, 0, false
	}
	fields := strings.Fields(sc.Text())
	if len(fields) < 5 || fields[0] != "cpu" {
		return 0, 0, false
	}
	for i, s := range fields[1:] {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, 0, false
		}
		if i >= 8 { // guest time is already counted in user
			break
		}
		total += v
		if i != 3 && i != 4 { // idle, iowait
			busy += v
		}
	}
	return busy, total, true
}
