package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/cronlock/cronlock/internal/config"
	"github.com/cronlock/cronlock/internal/jobstore"
)

// clientRuntime is what an operator command knows of the runtime jobs it
// loaded (Client.LoadRuntimeJobs): each as its stored definition makes it
// under the command's configuration.
type clientRuntime struct {
	jobs  map[string]config.Job
	order []string          // names, in the order loaded (sorted when all were)
	bad   map[string]string // names whose stored definition does not validate here: why
}

// JobStore opens the runtime jobs' store of the client's configuration;
// with runtime jobs disabled, its error says how to enable them.
func (c *Client) JobStore(ctx context.Context) (*jobstore.Store, error) {
	return OpenJobStore(ctx, c.conn.JS, c.cfg)
}

// LoadRuntimeJobs makes the runtime jobs called names (every stored one
// when names is empty) known to History, Suspend, Resume, Trigger and
// TriggerRemote beside the file's jobs. Names of file jobs are skipped;
// nothing is loaded when runtime jobs are disabled. A name that neither
// the file nor the bucket has is an error matching ErrNoJob. A stored
// definition that does not validate under this configuration is still
// known, by its name only (a replica does not schedule it either).
func (c *Client) LoadRuntimeJobs(ctx context.Context, names ...string) error {
	if !c.cfg.RuntimeJobs.Enabled {
		return nil
	}
	store, err := c.JobStore(ctx)
	if err != nil {
		return err
	}
	all := len(names) == 0
	if all {
		if names, err = store.Names(ctx); err != nil {
			return err
		}
	}
	var want []string
	seen := map[string]bool{}
	for _, name := range names {
		if _, err := FindJob(c.cfg, name); err != nil && !seen[name] {
			seen[name] = true
			want = append(want, name)
		}
	}
	got, errs := store.GetMany(ctx, want)
	rt := &clientRuntime{jobs: map[string]config.Job{}, bad: map[string]string{}}
	for i, name := range want {
		switch err := errs[i]; {
		case errors.Is(err, jobstore.ErrNotFound) && all:
			continue // deleted since the listing
		case errors.Is(err, jobstore.ErrNotFound):
			return fmt.Errorf("job %q: %w %s, nor a runtime job", name, ErrNoJob, c.cfg.Path)
		case err != nil:
			return err
		}
		rt.add(c.cfg, got[i])
	}
	c.runtime = rt
	return nil
}

// add decodes st as the replicas do (decodeStored); the file's jobs were
// left out by the caller.
func (rt *clientRuntime) add(cfg *config.Config, st jobstore.Stored) {
	rt.order = append(rt.order, st.Name)
	cj, err := decodeStored(cfg, nil, st)
	if err != nil {
		rt.bad[st.Name] = err.Error()
		cj = config.Job{Name: st.Name}
	}
	rt.jobs[st.Name] = cj
}

// findJob is the file's job called name, else the loaded runtime job of
// that name; else an error matching ErrNoJob. source is SourceFile or
// SourceRuntime.
func (c *Client) findJob(name string) (cj config.Job, source string, err error) {
	cj, err = FindJob(c.cfg, name)
	if err == nil || c.runtime == nil {
		return cj, SourceFile, err
	}
	if rj, ok := c.runtime.jobs[name]; ok {
		return rj, SourceRuntime, nil
	}
	return cj, SourceFile, err
}

// runtimeJobs is the loaded runtime jobs, in the order loaded.
func (c *Client) runtimeJobs() []config.Job {
	if c.runtime == nil {
		return nil
	}
	out := make([]config.Job, 0, len(c.runtime.order))
	for _, name := range c.runtime.order {
		out = append(out, c.runtime.jobs[name])
	}
	return out
}

// runtimeInvalid reports whether name is a loaded runtime job whose stored
// definition does not validate here.
func (c *Client) runtimeInvalid(name string) bool {
	if c.runtime == nil {
		return false
	}
	_, bad := c.runtime.bad[name]
	return bad
}
