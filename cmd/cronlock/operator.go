package main

import (
	"context"
	"errors"
	"os/signal"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/app"
	"github.com/cronlock/cronlock/internal/config"
)

// queryTimeout bounds the operator commands that only read or write NATS
// (locks, status, unlock, suspend, resume, replicas).
const queryTimeout = 30 * time.Second

// operatorContext is cancelled by SIGINT or SIGTERM, and after timeout when
// it is positive.
func operatorContext(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	if timeout <= 0 {
		return ctx, stop
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	return ctx, func() { cancel(); stop() }
}

// failFast runs a command with a context that the NATS connection it
// dials cancels as soon as the server refuses it a permission
// (app.FailOnRefusal): the command then fails at once, and its error is the
// refusal, which names the permission, rather than what its interrupted
// operation returned or a timeout.
func failFast(ctx context.Context, run func(context.Context) error) error {
	ctx, cancel := app.FailOnRefusal(ctx)
	defer cancel()
	err := run(ctx)
	if refused := app.Refused(ctx); err != nil && refused != nil {
		return refused
	}
	return err
}

// dial connects an operator command to NATS (see app.Dial). Its logs go to
// stderr at the configured level, but no lower than warn unless verbose: the
// command's output is what matters.
func (c *cli) dial(ctx context.Context, cfg *config.Config, verbose bool) (*app.Client, error) {
	return c.dialVia(ctx, cfg, verbose, app.Dial)
}

// dialFunc is app.Dial or app.DialRunning.
type dialFunc func(context.Context, *config.Config, zerolog.Logger) (*app.Client, error)

// dialVia is dial with app.Dial's variant dial.
func (c *cli) dialVia(ctx context.Context, cfg *config.Config, verbose bool, dial dialFunc) (*app.Client, error) {
	log, err := app.NewLogger(cfg.Log, c.stderr)
	if err != nil {
		return nil, &usageError{err: err}
	}
	if !verbose && log.GetLevel() < zerolog.WarnLevel {
		log = log.Level(zerolog.WarnLevel)
	}
	cl, err := dial(ctx, cfg, log)
	if errors.Is(err, context.DeadlineExceeded) {
		return nil, errors.New("NATS did not answer in time: " + err.Error())
	}
	return cl, err
}

// query loads the configuration and connects, for an operator command that
// must be done within queryTimeout (or at SIGINT/SIGTERM). done closes the
// connection and releases the context.
func (c *cli) query(ctx context.Context, fs *flagSet) (context.Context, *app.Client, func(), error) {
	cfg, err := fs.load()
	if err != nil {
		return nil, nil, nil, err
	}
	return c.queryConfig(ctx, cfg)
}

// queryConfig is query with the configuration already loaded.
func (c *cli) queryConfig(ctx context.Context, cfg *config.Config) (context.Context, *app.Client, func(), error) {
	ctx, cancel := operatorContext(ctx, queryTimeout)
	cl, err := c.dial(ctx, cfg, false)
	if err != nil {
		cancel()
		return nil, nil, nil, err
	}
	return ctx, cl, func() { cl.Close(); cancel() }, nil
}
