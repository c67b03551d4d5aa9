// Command tenants is a service that gives each of its customers a schedule
// of their own: "send acme's report every Monday 09:00 Europe/Berlin". The
// schedules are data, not code: the service puts a runtime job per tenant
// into a KV bucket (scheduler.RuntimeJobs), and every replica follows the
// bucket (Scheduler.FollowRuntimeJobs), so each tick of each tenant's job
// runs on exactly one replica. The job names a kind ("report"), which is
// this program's code, and carries the tenant in its payload.
//
// Try it with no setup (an in-process NATS server): it schedules a report
// every two seconds for two tenants, and removes one after a while:
//
//	go run ./examples/tenants -embedded
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/examples/internal/exnats"
	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/lock"
	"github.com/cronlock/cronlock/scheduler"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "tenants:", err)
		os.Exit(1)
	}
}

// tenant is a report job's payload.
type tenant struct {
	Tenant string `json:"tenant"`
}

// run runs the service until SIGINT, SIGTERM or the end of ctx.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("tenants", flag.ContinueOnError)
	fs.SetOutput(stdout)
	natsURL := fs.String("nats", nats.DefaultURL, "NATS server URL")
	embedded := fs.Bool("embedded", false, "start an in-process nats-server with JetStream instead")
	spec := fs.String("schedule", "*/2 * * * * *", "each tenant's report schedule (6 fields: seconds first)")
	seed := fs.Bool("seed", true, "put the tenants acme and globex, and delete globex after -delete-after")
	deleteAfter := fs.Duration("delete-after", 5*time.Second, "when -seed deletes globex's report")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := zerolog.New(zerolog.SyncWriter(stdout)).With().Timestamp().Logger()

	n, err := exnats.Start(*natsURL, *embedded)
	if err != nil {
		return err
	}
	defer n.Close()
	nc, js, err := n.Connect("cronlock-tenants")
	if err != nil {
		return err
	}
	defer nc.Close()

	locker, err := lock.New(ctx, js, lock.Options{Logger: log})
	if err != nil {
		return err
	}
	defer locker.Close()
	sched, err := scheduler.New(ctx, js, locker, scheduler.Options{Logger: log, ShutdownGrace: 5 * time.Second})
	if err != nil {
		return err
	}
	jobs, err := scheduler.OpenRuntimeJobs(ctx, js, scheduler.RuntimeJobsOptions{})
	if err != nil {
		return err
	}
	// What a runtime job may run is this program's code: a kind per
	// function. The payload says for whom.
	if err := sched.FollowRuntimeJobs(ctx, jobs, scheduler.Kinds{"report": report(log)}); err != nil {
		return err
	}
	if *seed {
		go seedTenants(ctx, jobs, *spec, *deleteAfter, log)
	}
	return sched.Run(ctx)
}

// report sends one tenant's report: here, a log line.
func report(log zerolog.Logger) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		var t tenant
		if err := json.Unmarshal(job.Payload(ctx), &t); err != nil {
			return fmt.Errorf("payload: %w", err)
		}
		info, _ := job.FromContext(ctx)
		log.Info().Str("tenant", t.Tenant).Time("tick", info.Tick).Str("owner", info.Owner).Msg("report sent")
		return nil
	}
}

// seedTenants is what the service's own code does when customers sign up
// and leave: it puts and deletes their jobs.
func seedTenants(ctx context.Context, jobs *scheduler.RuntimeJobs, spec string, deleteAfter time.Duration, log zerolog.Logger) {
	for _, name := range []string{"acme", "globex"} {
		payload, _ := json.Marshal(tenant{Tenant: name})
		rev, err := jobs.Put(ctx, scheduler.RuntimeJob{
			Name: "report." + name, Schedule: spec, Timezone: "Europe/Berlin",
			Kind: "report", Payload: payload, Timeout: scheduler.Duration(time.Minute),
		}, scheduler.By("signup"))
		if err != nil {
			log.Error().Err(err).Str("tenant", name).Msg("cannot schedule the tenant's report")
			continue
		}
		log.Info().Str("tenant", name).Uint64("revision", rev).Msg("tenant's report scheduled")
	}
	select {
	case <-ctx.Done():
		return
	case <-time.After(deleteAfter):
	}
	if _, err := jobs.Delete(ctx, "report.globex", scheduler.By("offboarding")); err != nil {
		log.Error().Err(err).Msg("cannot delete globex's report")
		return
	}
	log.Info().Str("tenant", "globex").Msg("tenant's report deleted")
}
