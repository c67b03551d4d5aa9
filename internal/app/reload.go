package app

import (
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"slices"

	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/config"
)

// Reload reads the configuration file again and applies its jobs: removed
// jobs stop being scheduled, added ones start, and changed ones are removed
// and added again. A run in progress is never interrupted; it finishes, and
// the job's lock keeps the new version from overlapping it. An invalid file
// is rejected as a whole, its errors logged, and the jobs running stay as
// they are. The HTTP tokens take effect at once (webtokens.go). Settings
// other than jobs and those (nats, lock, history, http, log,
// shutdown_grace, config_watch, max_concurrent_runs) are logged as needing a
// restart and not applied.
//
// Reload returns the error it logged, for tests; SIGHUP calls it.
func (d *Daemon) Reload() error {
	// The file is parsed without d.mu (100,000 jobs take seconds), so the
	// page, /metrics and triggers go on meanwhile; reloads themselves run
	// one at a time.
	d.reloading.Lock()
	defer d.reloading.Unlock()
	d.mu.Lock()
	path := d.cfg.Path
	d.mu.Unlock()
	log := d.log.With().Str("config", path).Logger()
	next, err := config.Load(path)
	// A large file's parse leaves a peak behind (a 100,000-job file:
	// hundreds of MB) that the runtime returns only slowly: give it back
	// now, as after start-up.
	defer debug.FreeOSMemory()
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		d.reloads.record(err)
		log.Error().Err(err).Msg("reload rejected: invalid configuration; the previous one keeps running")
		return err
	}
	d.applyTokens(next, log)
	if changed := restartSections(d.cfg, next); len(changed) > 0 {
		log.Warn().Strs("sections", changed).Msg("reload: these settings changed and take effect only after a restart")
	}
	if d.sched == nil {
		d.adoptJobs(next, log)
		return nil
	}
	var runtimeJobs []decoded
	if rt := d.runtime.Load(); rt != nil {
		// A file job may not take a runtime job's name, and a kind may not
		// go while runtime jobs run it: the reload is rejected, naming them.
		if runtimeJobs, err = rt.revalidate(next); err != nil {
			d.reloads.record(err)
			log.Error().Err(err).Msg("reload rejected: the runtime jobs would not fit it; the previous configuration keeps running")
			return err
		}
	}

	c := d.applyJobs(next)
	cfg := *d.cfg
	cfg.Jobs = c.inEffect
	cfg.Notify = next.Notify
	cfg.Kinds = next.Kinds
	d.cfg = &cfg
	d.runtime.Load().apply(d.cfg, runtimeJobs) // as next's kinds make them
	d.triggers.sync(d.conn.Load().NC, d.cfg)
	if err := d.notifier.SetTargets(cfg.NotifyTargets()); err != nil {
		c.errs = append(c.errs, fmt.Errorf("notify: %w", err))
	}
	err = errors.Join(c.errs...)
	d.reloads.record(err)
	if err != nil {
		log.Error().Err(err).Strs("added", c.added).Strs("removed", c.removed).Strs("changed", c.changed).
			Msg("reload applied in part")
		return err
	}
	log.Info().Strs("added", c.added).Strs("removed", c.removed).Strs("changed", c.changed).
		Int("jobs", len(c.inEffect)).Msg("configuration reloaded")
	return nil
}

// adoptJobs applies a reload made while the daemon waits for NATS: there is
// no scheduler yet, and openScheduler will add the jobs of d.cfg. Call with
// d.mu held.
func (d *Daemon) adoptJobs(next *config.Config, log zerolog.Logger) {
	cfg := *d.cfg
	cfg.Jobs, cfg.Notify = next.Jobs, next.Notify
	d.cfg = &cfg
	if err := d.notifier.SetTargets(cfg.NotifyTargets()); err != nil {
		log.Error().Err(err).Msg("reload: notification targets not applied")
	}
	d.reloads.record(nil)
	log.Info().Int("jobs", len(next.Jobs)).Msg("configuration reloaded; its jobs start once NATS is connected")
}

// restartSections names the top-level settings that differ between a and b,
// other than jobs.
func restartSections(a, b *config.Config) []string {
	var out []string
	for _, s := range []struct {
		name string
		x, y any
	}{
		{"nats", a.NATS, b.NATS},
		{"lock", a.Lock, b.Lock},
		{"history", a.History, b.History},
		{"deployment", a.Deployment, b.Deployment},
		{"replicas", a.Replicas, b.Replicas},
		{"replica", a.Replica, b.Replica},
		{"http", restartHTTP(a.HTTP), restartHTTP(b.HTTP)},
		{"log", a.Log, b.Log},
		{"shutdown_grace", a.ShutdownGrace, b.ShutdownGrace},
		{"config_watch", a.ConfigWatch, b.ConfigWatch},
		{"max_concurrent_runs", a.MaxConcurrentRuns, b.MaxConcurrentRuns},
		{"runtime_jobs", a.RuntimeJobs, b.RuntimeJobs},
	} {
		if !reflect.DeepEqual(s.x, s.y) {
			out = append(out, s.name)
		}
	}
	return out
}

// jobChanges is what applyJobs did.
type jobChanges struct {
	added, removed, changed []string
	inEffect                []config.Job // the jobs now scheduled
	errs                    []error
}

// applyJobs makes the scheduler's jobs those of next: adds the new ones,
// replaces the changed ones, removes the others. A job it cannot change
// stays as it was. Call with d.mu held and d.sched set. It touches only
// the jobs that changed: at 100,000 jobs it indexes the jobs in effect by
// name rather than copying them, and the jobs in effect are next's own
// unless a change failed.
func (d *Daemon) applyJobs(next *config.Config) jobChanges {
	path := next.Path
	var c jobChanges
	old := make(map[string]int, len(d.cfg.Jobs))
	for i := range d.cfg.Jobs {
		old[d.cfg.Jobs[i].Name] = i
	}
	// kept: jobs whose change failed and which stay as they were (the
	// previous version, or nothing for a failed add).
	kept := map[string]*config.Job{}
	jobs := NewJobMaker(d.jobOptions(d.cfg), d.log)
	for i := range next.Jobs {
		j := &next.Jobs[i]
		oi, ok := old[j.Name]
		delete(old, j.Name)
		switch {
		case !ok:
			if err := d.sched.Add(jobs.Job(*j)); err != nil {
				c.errs = append(c.errs, fmt.Errorf("%s:%d: add job %q: %w", path, j.Line, j.Name, err))
				kept[j.Name] = nil
				continue
			}
			c.added = append(c.added, j.Name)
		case !sameJob(d.cfg.Jobs[oi], *j):
			if err := d.sched.Remove(j.Name); err != nil {
				c.errs = append(c.errs, fmt.Errorf("%s:%d: replace job %q: %w", path, j.Line, j.Name, err))
				kept[j.Name] = &d.cfg.Jobs[oi]
				continue
			}
			if err := d.sched.Add(jobs.Job(*j)); err != nil {
				c.errs = append(c.errs, fmt.Errorf("%s:%d: replace job %q: %w", path, j.Line, j.Name, err))
				kept[j.Name] = nil
				continue
			}
			c.changed = append(c.changed, j.Name)
		}
	}
	var stay []config.Job // removals that failed
	for name, oi := range old {
		if err := d.sched.Remove(name); err != nil {
			c.errs = append(c.errs, fmt.Errorf("remove job %q: %w", name, err))
			stay = append(stay, d.cfg.Jobs[oi])
			continue
		}
		c.removed = append(c.removed, name)
	}
	slices.Sort(c.removed)
	c.inEffect = inEffect(next.Jobs, kept, stay)
	return c
}

// inEffect is next with the failed changes of applyJobs undone: a job in
// kept is its previous version, or left out when nil; stay are appended.
func inEffect(next []config.Job, kept map[string]*config.Job, stay []config.Job) []config.Job {
	if len(kept) == 0 && len(stay) == 0 {
		return next
	}
	out := make([]config.Job, 0, len(next)+len(stay))
	for _, j := range next {
		if k, ok := kept[j.Name]; ok {
			if k != nil {
				out = append(out, *k)
			}
			continue
		}
		out = append(out, j)
	}
	return append(out, stay...)
}
