package main

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/lock"
	"github.com/cronlock/cronlock/scheduler"
)

// member is one replica's scheduler inside a replica process: its own
// connection, lock client, scheduler and metrics registry. A process runs
// one member, or all of them with -colocate.
type member struct {
	name   string
	nc     *nats.Conn
	locker *lock.Locker
	sched  *scheduler.Scheduler
	reg    *prometheus.Registry
}

// startMember connects and builds the member's scheduler with the default
// options; close releases what it holds.
func startMember(ctx context.Context, name, url string, logger zerolog.Logger) (*member, error) {
	nc, err := nats.Connect(url, nats.Name("cronlock-bench-"+name), nats.MaxReconnects(-1))
	if err != nil {
		return nil, err
	}
	m := &member{name: name, nc: nc, reg: prometheus.NewRegistry()}
	js, err := jetstream.New(nc)
	if err != nil {
		m.close()
		return nil, err
	}
	if m.locker, err = lock.New(ctx, js, lock.Options{OwnerID: name, Logger: logger}); err != nil {
		m.close()
		return nil, err
	}
	if m.sched, err = scheduler.New(ctx, js, m.locker, scheduler.Options{Registerer: m.reg, Logger: logger}); err != nil {
		m.close()
		return nil, err
	}
	return m, nil
}

func (m *member) close() {
	if m.locker != nil {
		m.locker.Close()
	}
	m.nc.Close()
}

// addJobs registers the bench's jobs; a run records its tick and start in
// recs[i], which the members of a process share.
func (m *member) addJobs(cfg replicaConfig, recs []*runRec) error {
	for i, r := range recs {
		schedule := cfg.Schedule
		if cfg.Idle {
			schedule = dailySchedule(i, cfg.Jobs)
		}
		err := m.sched.Add(job.Job{Name: jobName(i), Schedule: schedule, Run: r.run(cfg.Work)})
		if err != nil {
			return err
		}
	}
	return nil
}

// run is a job's Run: it records the tick and the start, then works for
// work (or until its context ends).
func (r *runRec) run(work time.Duration) func(context.Context) error {
	return func(ctx context.Context) error {
		start := time.Now()
		info, _ := job.FromContext(ctx)
		r.mu.Lock()
		r.runs = append(r.runs, [2]int64{info.Tick.Unix(), start.Sub(info.Tick).Microseconds()})
		r.mu.Unlock()
		if work > 0 {
			t := time.NewTimer(work)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
			}
		}
		return nil
	}
}

// members is a process's schedulers.
type members []*member

func (ms members) close() {
	for _, m := range ms {
		m.close()
	}
}

// stats is the members' connection statistics summed.
func (ms members) stats() nats.Statistics {
	var s nats.Statistics
	for _, m := range ms {
		st := m.nc.Stats()
		s.InMsgs += st.InMsgs
		s.OutMsgs += st.OutMsgs
		s.InBytes += st.InBytes
		s.OutBytes += st.OutBytes
		s.Reconnects += st.Reconnects
	}
	return s
}

// run runs every member's scheduler until ctx ends and returns their
// errors joined once all have returned.
func (ms members) run(ctx context.Context) <-chan error {
	done := make(chan error, 1)
	errs := make(chan error, len(ms))
	for _, m := range ms {
		go func() { errs <- m.sched.Run(ctx) }()
	}
	go func() {
		var all []error
		for range ms {
			all = append(all, <-errs)
		}
		done <- errors.Join(all...)
	}()
	return done
}

// gather sums the members' metrics into rep.
func (ms members) gather(rep *replicaReport) error {
	for _, m := range ms {
		if err := gather(m.reg, rep); err != nil {
			return err
		}
	}
	return nil
}
