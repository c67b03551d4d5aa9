package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/cronlock/cronlock/internal/web"
)

// memSource is an in-memory web.Source: the tests' stand-in for the daemon's
// view of the cluster. Actions change its state as the real ones do
// (suspend clears Next, trigger adds a manual run) and are counted.
type memSource struct {
	mu       sync.Mutex
	order    []string
	jobs     map[string]*web.JobDetail
	replicas []web.Replica
	calls    map[string]int // "trigger backup" -> count
	rows     int            // jobs Jobs returned, in all
}

func newMemSource() *memSource {
	return &memSource{jobs: map[string]*web.JobDetail{}, calls: map[string]int{}}
}

// put adds or replaces a job.
func (m *memSource) put(d web.JobDetail) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.jobs[d.Name]; !ok {
		m.order = append(m.order, d.Name)
	}
	m.jobs[d.Name] = &d
}

// addRun prepends a finished run to a job and updates its last-run fields.
func (m *memSource) addRun(name string, r web.Run) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.jobs[name]
	d.Runs = append([]web.Run{r}, d.Runs...)
	d.RecentRuns = append([]web.RecentRun{{Tick: r.Tick, Status: r.Status, DurationSeconds: r.DurationSeconds, Failed: r.Failed}}, d.RecentRuns...)
	d.LastStatus, d.LastStart, d.LastEnd, d.LastOwner = r.Status, r.Start, r.End, r.Owner
	d.LastDurationSeconds = r.DurationSeconds
}

func (m *memSource) setReplicas(r []web.Replica) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.replicas = r
}

func (m *memSource) count(call string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls[call]
}

func (m *memSource) totalCalls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, c := range m.calls {
		n += c
	}
	return n
}

func (m *memSource) suspended(name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.jobs[name].Suspended
}

func (m *memSource) Jobs(_ context.Context, q web.JobQuery) (web.JobList, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	refs := make([]web.JobRef, 0, len(m.order))
	for _, n := range m.order {
		refs = append(refs, web.JobRef{Name: n, Source: m.jobs[n].Source})
	}
	sel := web.SelectJobs(refs, q)
	out := make([]web.Job, 0, len(sel.Refs))
	for _, r := range sel.Refs {
		out = append(out, m.jobs[r.Name].Job)
	}
	m.rows += len(out)
	return web.JobList{Jobs: out, Total: sel.Total, Before: sel.Before}, nil
}

func (m *memSource) Job(_ context.Context, name string) (web.JobDetail, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.jobs[name]
	if !ok {
		return web.JobDetail{}, fmt.Errorf("job %q: %w", name, web.ErrNotFound)
	}
	c := *d
	c.Runs = append([]web.Run(nil), d.Runs...)
	return c, nil
}

func (m *memSource) Replicas(context.Context) ([]web.Replica, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]web.Replica(nil), m.replicas...), nil
}

func (m *memSource) act(name, action string, apply func(*web.JobDetail)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.jobs[name]
	if !ok {
		return fmt.Errorf("job %q: %w", name, web.ErrNotFound)
	}
	m.calls[action+" "+name]++
	apply(d)
	return nil
}

func (m *memSource) Trigger(_ context.Context, name string) error {
	return m.act(name, "trigger", func(d *web.JobDetail) {
		now := time.Now().UTC()
		d.Runs = append([]web.Run{{Tick: now, Start: now, Status: "running", Attempts: 1,
			Owner: "replica-a", Token: 99, Manual: true, Reason: "triggered from the status page"}}, d.Runs...)
		d.LastStatus, d.LastStart = "running", now
	})
}

func (m *memSource) Suspend(_ context.Context, name string) error {
	return m.act(name, "suspend", func(d *web.JobDetail) { d.Suspended, d.Next = true, time.Time{} })
}

func (m *memSource) Resume(_ context.Context, name string) error {
	return m.act(name, "resume", func(d *web.JobDetail) {
		d.Suspended, d.Next = false, time.Now().Add(time.Minute).Truncate(time.Minute)
	})
}

func (m *memSource) Cancel(_ context.Context, name string) error {
	var err error
	aerr := m.act(name, "cancel", func(d *web.JobDetail) {
		if !d.Running {
			err = fmt.Errorf("job %q is not running: %w", name, web.ErrConflict)
			return
		}
		d.Running, d.Holder, d.Token, d.Lock, d.LastStatus = false, "", 0, nil, "cancelled"
	})
	if aerr != nil {
		return aerr
	}
	return err
}

func (m *memSource) Backfill(_ context.Context, name string, from, to time.Time, _ string, _ bool) ([]time.Time, error) {
	var ticks []time.Time
	err := m.act(name, "backfill", func(*web.JobDetail) {
		for t := from; !t.After(to); t = t.Add(time.Minute) {
			ticks = append(ticks, t)
		}
	})
	return ticks, err
}

// xssPayload is what a hostile job prints: if the page ever treats output as
// markup, one of these sets window.__pwned.
const xssPayload = `<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">`

// fixture returns a source with three jobs: backup (idle, two runs),
// report (running, locked) and evil (its output, error and reason are
// markup), and two replicas.
func fixture() *memSource {
	m := newMemSource()
	base := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	exit0, exit3 := 0, 3
	next := time.Now().Add(3 * time.Minute).Truncate(time.Minute)
	m.put(web.JobDetail{
		Job: web.Job{Name: "backup", Schedule: "*/5 * * * *", Timezone: "Europe/Berlin",
			Next: next, LastStatus: "succeeded",
			LastStart: base, LastEnd: base.Add(4200 * time.Millisecond), LastDurationSeconds: 4.2,
			RecentRuns: backupStrip(base), SuccessRate: &backupRate, LastOwner: "replica-a",
			NextLocal: next.In(berlin()).Format("2006-01-02 15:04:05 MST")},
		Settings: &web.Settings{Shell: "pg_dump --all > /backup/db.sql", Timeout: "5m0s", Retries: 2, RetryBackoff: "30s",
			StartingDeadline: "10m0s", Overlap: "queue", MaxParallel: 1, Group: "backups", RunOn: "one"},
		Runs: []web.Run{
			{Tick: base, Status: "succeeded", Attempts: 1, Start: base, End: base.Add(4200 * time.Millisecond),
				DurationSeconds: 4.2, ExitCode: &exit0, Output: "dumped 42 tables\n", Owner: "replica-a", Token: 7},
			{Tick: base.Add(-5 * time.Minute), Status: "failed", Attempts: 2, Start: base.Add(-5 * time.Minute),
				End: base.Add(-5*time.Minute + time.Second), DurationSeconds: 1, ExitCode: &exit3,
				Output: "disk full\n", Error: "proc: command exited with status 3", Owner: "replica-b", Token: 6, Failed: true},
		},
	})
	m.put(web.JobDetail{
		Job: web.Job{Name: "report", Source: "runtime", Schedule: "@hourly", Timezone: "UTC", Next: time.Now().Add(time.Hour).Truncate(time.Hour),
			LastStatus: "running", LastStart: base, Running: true, Holder: "replica-b", Token: 12, LastOwner: "replica-b",
			RecentRuns: []web.RecentRun{{Tick: base, Status: "running"}}},
		Definition: json.RawMessage(`{"name":"report","schedule":"@hourly","kind":"report"}`), Revision: 7,
		Settings: &web.Settings{Kind: "report", RunOn: "every_replica"},
		Lock:     &web.Lock{Owner: "replica-b", Token: 12, AcquiredAt: base, ExpiresAt: base.Add(30 * time.Second)},
		Runs:     []web.Run{{Tick: base, Status: "running", Attempts: 1, Start: base, Owner: "replica-b", Token: 12}},
	})
	m.put(web.JobDetail{
		Job: web.Job{Name: "evil", Schedule: "@daily", Timezone: "UTC", LastStatus: "failed", Ended: base.Add(-time.Hour),
			LastStart: base, LastEnd: base.Add(time.Second), LastDurationSeconds: 1},
		Runs: []web.Run{{Tick: base, Status: "failed", Attempts: 1, Start: base, End: base.Add(time.Second),
			DurationSeconds: 1, ExitCode: &exit3, Output: xssPayload + "\n", Error: xssPayload,
			Reason: xssPayload, Owner: "replica-a", Token: 3}},
	})
	off := 0.012
	m.setReplicas([]web.Replica{
		{Owner: "replica-a", Host: "node-1", PID: 101, Version: "v1.4.0", Started: base.Add(-time.Hour), Running: nil},
		{Owner: "replica-b", Host: "node-2", PID: 202, Version: "v1.4.0", Started: base.Add(-time.Hour),
			Running: []string{"report"}, ClockOffsetSeconds: &off, Labels: map[string]string{"zone": "eu-1", "role": "batch"}},
	})
	return m
}

// backupRate is the success rate the fixture's backup job shows.
var backupRate = 2.0 / 3

// backupStrip is backup's strip, newest first: a cell of each colour.
func backupStrip(base time.Time) []web.RecentRun {
	statuses := []string{"succeeded", "timeout", "missed", "skipped", "cancelled", "interrupted", "succeeded"}
	out := make([]web.RecentRun, len(statuses))
	for i, st := range statuses {
		out[i] = web.RecentRun{Tick: base.Add(-time.Duration(i) * 5 * time.Minute), Status: st, Failed: st == "timeout"}
		if st != "missed" && st != "skipped" {
			out[i].DurationSeconds = 4.2
		}
	}
	return out
}

// berlin is the fixture's backup job's zone.
func berlin() *time.Location {
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		panic(err) // the Go distribution and Debian both carry the zone database
	}
	return loc
}
