package scheduler_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/run"

	"github.com/cronlock/cronlock/job"
	"github.com/cronlock/cronlock/lock"
	"github.com/cronlock/cronlock/scheduler"
)

// A background worker: the scheduler runs in an oklog/run group next to
// whatever else the process serves, and stops with it.
func Example() {
	// An embedded server stands in for your NATS cluster.
	dir, _ := os.MkdirTemp("", "scheduler-example-")
	defer os.RemoveAll(dir)
	ns, _ := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true})
	go ns.Start()
	ns.ReadyForConnections(5 * time.Second)
	defer ns.Shutdown()

	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()

	locker, err := lock.New(ctx, js, lock.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer locker.Close()
	s, err := scheduler.New(ctx, js, locker, scheduler.Options{})
	if err != nil {
		log.Fatal(err)
	}
	ran := make(chan struct{})
	err = s.Add(job.Job{
		Name:     "cleanup.sessions",
		Schedule: "* * * * * *", // every second, on one replica
		Run: func(ctx context.Context) error {
			info, _ := job.FromContext(ctx)
			_ = info.Token // pass the fencing token to what you write to
			close(ran)
			return nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}

	var g run.Group
	runCtx, stop := context.WithCancel(ctx)
	g.Add(func() error { return s.Run(runCtx) }, func(error) { stop() })
	g.Add(func() error { // stands in for a signal handler or an HTTP server
		<-ran
		return nil
	}, func(error) {})
	fmt.Println(g.Run())
	// Output: <nil>
}
