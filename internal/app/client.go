package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/config"
	"github.com/cronlock/cronlock/lock"
	"github.com/cronlock/cronlock/scheduler"
)

// Client serves the operator commands (locks, status, trigger, unlock): a
// connection reached as Dial describes and the Locker on the lock bucket.
type Client struct {
	cfg    *config.Config
	log    zerolog.Logger
	conn   *Conn
	locker *lock.Locker
}

// Dial connects an operator command to the NATS of cfg: nats.url if set;
// else the embedded server of a `cronlock run` on this host at
// nats.embedded.listen, if one answers there; else an embedded server of its
// own on nats.embedded.store_dir, which fails with an error matching
// ErrStoreInUse while another cronlock process holds that store. It opens
// (creating when missing) the lock bucket.
func Dial(ctx context.Context, cfg *config.Config, log zerolog.Logger) (*Client, error) {
	conn, err := dialOperator(cfg.NATS, log)
	if err != nil {
		return nil, err
	}
	locker, err := lock.New(ctx, conn.JS, LockOptions(cfg, log))
	if err != nil {
		conn.Close()
		return nil, err
	}
	return &Client{cfg: cfg, log: log, conn: conn, locker: locker}, nil
}

// Close closes the Locker, the connection and any embedded server.
func (c *Client) Close() {
	c.locker.Close()
	c.conn.Close()
}

// Locks returns the holder of every held lock of the lock bucket, sorted by
// key; keys need not be jobs of the configuration.
func (c *Client) Locks(ctx context.Context) ([]lock.Holder, error) {
	return c.locker.List(ctx)
}

// JobHistory is a job's recent runs, newest first.
type JobHistory struct {
	Job  config.Job
	Runs []scheduler.Run
}

// History returns up to n recent runs (all kept ones if n <= 0) of every job
// of the configuration, in file order, from the shared history bucket.
func (c *Client) History(ctx context.Context, n int) ([]JobHistory, error) {
	h, err := c.history(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]JobHistory, 0, len(c.cfg.Jobs))
	for _, cj := range c.cfg.Jobs {
		runs, err := h.Runs(ctx, cj.Name)
		if err != nil {
			return nil, err
		}
		if n > 0 && len(runs) > n {
			runs = runs[:n]
		}
		out = append(out, JobHistory{Job: cj, Runs: runs})
	}
	return out, nil
}

// history opens the shared run history (creating its bucket when missing).
func (c *Client) history(ctx context.Context) (*scheduler.History, error) {
	return scheduler.OpenHistory(ctx, c.conn.JS, scheduler.HistoryOptions{
		Bucket: c.cfg.History.Bucket, Replicas: c.cfg.Lock.Replicas, Size: c.cfg.History.Size,
	})
}

// ErrNoJob is returned for a job name the configuration does not define.
var ErrNoJob = errors.New("no such job in the configuration")

// FindJob returns the job called name, or an error matching ErrNoJob.
func FindJob(cfg *config.Config, name string) (config.Job, error) {
	for _, j := range cfg.Jobs {
		if j.Name == name {
			return j, nil
		}
	}
	return config.Job{}, fmt.Errorf("job %q: %w %s", name, ErrNoJob, cfg.Path)
}

// Trigger runs the job once now in this process, under its lock, and
// returns the run's error (lock.ErrNotAcquired, wrapped, if it is running
// elsewhere). The run is recorded in the shared history as manual. ctx
// cancels the run: the command gets SIGTERM, then SIGKILL after its grace.
func (c *Client) Trigger(ctx context.Context, name string) error {
	cj, err := FindJob(c.cfg, name)
	if err != nil {
		return err
	}
	s, err := scheduler.New(ctx, c.conn.JS, c.locker, SchedulerOptions(c.cfg, c.log, nil))
	if err != nil {
		return err
	}
	if err := s.Add(Job(cj, JobOptionsFor(c.cfg), c.log)); err != nil {
		return err
	}
	return s.Trigger(ctx, name)
}

// Unlock force-releases the lock called key, whoever holds it, and returns
// the holder it removed. The holder's next renewal fails and its run is
// cancelled. Errors match lock.ErrNotHeld when the key is free.
func (c *Client) Unlock(ctx context.Context, key string) (lock.Holder, error) {
	h, err := c.locker.Holder(ctx, key)
	if err != nil {
		return lock.Holder{}, err
	}
	if err := c.locker.ForceRelease(ctx, key); err != nil {
		return lock.Holder{}, err
	}
	return h, nil
}
