// Package procstat samples what a benchmark process spends: its CPU time
// and peak memory (getrusage), and its NATS connection's traffic.
package procstat

import (
	"syscall"

	"github.com/nats-io/nats.go"
)

// Usage is the process's CPU time so far and its peak resident set.
type Usage struct {
	User, Sys float64 // seconds
	MaxRSSKiB int64
}

// CPU is the user and system time together.
func (u Usage) CPU() float64 { return u.User + u.Sys }

// Rusage samples the calling process; the zero Usage if it cannot.
func Rusage() Usage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return Usage{}
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return Usage{User: tv(ru.Utime), Sys: tv(ru.Stime), MaxRSSKiB: int64(ru.Maxrss)}
}

// NATS is a connection's traffic between two samples (its JSON field
// names are the reports' format).
type NATS struct {
	InMsgs, OutMsgs, InBytes, OutBytes, Reconnects uint64
}

// NATSDelta is the traffic from a to b (nats.Conn.Stats samples).
func NATSDelta(a, b nats.Statistics) NATS {
	return NATS{
		InMsgs: b.InMsgs - a.InMsgs, OutMsgs: b.OutMsgs - a.OutMsgs,
		InBytes: b.InBytes - a.InBytes, OutBytes: b.OutBytes - a.OutBytes,
		Reconnects: b.Reconnects - a.Reconnects,
	}
}
