package app

import (
	"context"

	"github.com/nats-io/nats.go"

	"github.com/cronlock/cronlock/internal/config"
	"github.com/cronlock/cronlock/internal/liveout"
	"github.com/cronlock/cronlock/job"
)

// Live output: each running command job's output is published as NATS core
// messages on OutputSubject(cfg, job) (see package liveout), which
// `cronlock logs -f` and the page's GET /api/jobs/{name}/output follow.
// Nothing of it is stored: the history keeps the tail, as before.

// OutputSubject is the subject of job's live output:
// cronlock.<history.bucket>.output.<job>.
func OutputSubject(cfg *config.Config, job string) string {
	return OutputSubjectPrefix(cfg) + job
}

// OutputSubjectPrefix is OutputSubject without the job:
// cronlock.<history.bucket>.output. (PERMISSIONS.md grants its ">").
func OutputSubjectPrefix(cfg *config.Config) string {
	return "cronlock." + cfg.History.Bucket + ".output."
}

// OutputSink starts the live output of a run (JobOptions.Output).
type OutputSink interface {
	StartOutput(job string, info job.RunInfo) *liveout.Stream
}

// connOutput publishes on the daemon's connection, once there is one.
type connOutput struct {
	conn   func() *Conn
	prefix string
}

// StartOutput starts a stream for the run, or returns nil without a
// connection.
func (o connOutput) StartOutput(name string, info job.RunInfo) *liveout.Stream {
	c := o.conn()
	if c == nil || c.NC == nil {
		return nil
	}
	return liveout.Start(c.NC, o.prefix+name, liveout.Run{
		Job: name, Tick: info.Tick, Owner: info.Owner, Token: info.Token, Attempt: info.Attempt,
	})
}

// jobOptions are the JobOptions of the daemon's jobs: JobOptionsFor(cfg),
// publishing their live output.
func (d *Daemon) jobOptions(cfg *config.Config) JobOptions {
	opts := JobOptionsFor(cfg)
	opts.Output = connOutput{conn: d.conn.Load, prefix: OutputSubjectPrefix(cfg)}
	return opts
}

// FollowOutput subscribes to the live output of the job called name; the
// follower is ready (a run starting afterwards is seen from its start)
// when it returns. Stop it when done.
func (c *Client) FollowOutput(ctx context.Context, name string) (*liveout.Follower, error) {
	return followOutput(ctx, c.conn.NC, OutputSubject(c.cfg, name))
}

func followOutput(ctx context.Context, nc *nats.Conn, subject string) (*liveout.Follower, error) {
	f, err := liveout.Follow(nc, subject)
	if err != nil {
		return nil, err
	}
	if err := f.Ready(ctx, nc); err != nil {
		f.Stop()
		return nil, err
	}
	return f, nil
}
